-- Store a rendered seat map built at ARGV[1] (the version read before its
-- Postgres query), unless a newer one is already stored, stamped with the
-- time it is stored (seatmap_read.lua rebuilds a map past a certain age).
-- KEYS[1] map (string "<version>:<built at, ms>:<body>"), ARGV[1] version,
-- ARGV[2] body, ARGV[3] ttl (s)
local old = redis.call('GET', KEYS[1])
if old then
  local stored = string.match(old, '^(%d+):')
  if stored and tonumber(stored) > tonumber(ARGV[1]) then
    return 0
  end
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. now .. ':' .. ARGV[2], 'EX', tonumber(ARGV[3]))
return 1
