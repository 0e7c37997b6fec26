-- Finish an in-flight reservation. With ARGV[3] = '1' the tickets go back to
-- the counter (the Postgres transaction failed); otherwise they stay taken.
-- Optionally releases the claimer's lock in the same round trip, only if it
-- still holds our token.
-- KEYS[1] counter, KEYS[2] in-flight zset, KEYS[3] (optional) lock
-- ARGV[1] qty, ARGV[2] reservation id, ARGV[3] give back ('1' or '0'),
-- ARGV[4] lock token (with KEYS[3])
local removed = redis.call('ZREM', KEYS[2], ARGV[2] .. ':' .. ARGV[1])
if ARGV[3] == '1' and removed == 1 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
end
if KEYS[3] and redis.call('GET', KEYS[3]) == ARGV[4] then
  redis.call('DEL', KEYS[3])
end
return removed
