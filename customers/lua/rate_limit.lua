-- Fixed-window counters for one identity, checked and counted atomically.
-- KEYS[i]: one counter per window (same hash tag); ARGV[2i-1], ARGV[2i]: its
-- limit and window length in ms. Returns 0 when the request may go (every
-- counter incremented), else the ms until the fullest window ends (nothing
-- incremented: a refused request does not extend the wait).
local wait = 0
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[2 * i - 1])
  local count = tonumber(redis.call('GET', key) or '0')
  if count >= limit then
    local ttl = redis.call('PTTL', key)
    if ttl < 0 then ttl = tonumber(ARGV[2 * i]) end
    if ttl > wait then wait = ttl end
  end
end
if wait > 0 then return wait end
for i, key in ipairs(KEYS) do
  if redis.call('INCR', key) == 1 then
    redis.call('PEXPIRE', key, ARGV[2 * i])
  end
end
return 0
