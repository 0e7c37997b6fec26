-- Finish an in-flight reservation. With ARGV[3] = '1' the tickets go back to
-- the counter (the Postgres transaction failed); otherwise they stay taken,
-- and the reservation moves to the tier's recently-committed set, where a
-- sync that read Postgres before this commit still finds it (sync.lua).
-- Optionally releases the claimer's lock in the same round trip, only if it
-- still holds our token.
-- KEYS[1] counter, KEYS[2] in-flight zset, KEYS[3] recently-committed zset,
-- And optionally removes one member of one more sorted set (the claimer's
-- admission slot, once the claim committed), still in the same round trip.
-- KEYS[4] (optional) lock, KEYS[5] (optional) sorted set
-- ARGV[1] qty, ARGV[2] reservation id, ARGV[3] give back ('1' or '0'),
-- ARGV[4] now (ms), ARGV[5] cut-off (ms) for committed members,
-- ARGV[6] lock token (with KEYS[4]), ARGV[7] member (with KEYS[5])
local member = ARGV[2] .. ':' .. ARGV[1]
local removed = redis.call('ZREM', KEYS[2], member)
if removed == 1 then
  if ARGV[3] == '1' then
    if redis.call('EXISTS', KEYS[1]) == 1 then
      redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
    end
  else
    redis.call('ZADD', KEYS[3], ARGV[4], member)
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[5])
  end
end
if KEYS[4] and redis.call('GET', KEYS[4]) == ARGV[6] then
  redis.call('DEL', KEYS[4])
end
if KEYS[5] then
  redis.call('ZREM', KEYS[5], ARGV[7])
end
return removed
