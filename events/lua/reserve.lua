-- Take `qty` tickets from a tier counter if enough are left, and remember the
-- reservation as in flight until the Postgres transaction has finished.
-- KEYS[1] counter, KEYS[2] in-flight zset
-- ARGV[1] qty, ARGV[2] reservation id, ARGV[3] now (ms)
-- Returns the count left, -1 when the counter is missing (cache miss), -2 when
-- there are not enough tickets.
local left = redis.call('GET', KEYS[1])
if not left then
  return -1
end
local qty = tonumber(ARGV[1])
left = tonumber(left)
if left < qty then
  return -2
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2] .. ':' .. ARGV[1])
return redis.call('DECRBY', KEYS[1], qty)
