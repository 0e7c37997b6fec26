-- Store a rendered seat map built at ARGV[1] (the version read before its
-- Postgres query), unless a newer one is already stored.
-- KEYS[1] map (string "<version>:<json>"), ARGV[1] version, ARGV[2] json,
-- ARGV[3] ttl (s)
local old = redis.call('GET', KEYS[1])
if old then
  local colon = string.find(old, ':', 1, true)
  if colon and tonumber(string.sub(old, 1, colon - 1)) > tonumber(ARGV[1]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. ARGV[2], 'EX', tonumber(ARGV[3]))
return 1
