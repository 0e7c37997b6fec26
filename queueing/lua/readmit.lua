-- Put the admitted set right from Postgres after a tick found Redis behind
-- (admit.lua): each ADMITTED entry leaves the waiting line and is in the
-- admitted set with its admission expiry; then the served counter becomes
-- Postgres' total unless it is already higher. Idempotent.
-- KEYS[1] waiting zset, KEYS[2] admitted zset, KEYS[3] served counter
-- ARGV[1] served total in Postgres (-1: leave the counter, a later call sets
-- it), ARGV[2..] member, score pairs
-- Returns the members that were not in the admitted set with that score.
local moved = {}
for i = 2, #ARGV, 2 do
  redis.call('ZREM', KEYS[1], ARGV[i])
  if redis.call('ZADD', KEYS[2], 'CH', ARGV[i + 1], ARGV[i]) == 1 then
    moved[#moved + 1] = ARGV[i]
  end
end
local served = tonumber(ARGV[1])
if served >= 0 and tonumber(redis.call('GET', KEYS[3]) or '-1') < served then
  redis.call('SET', KEYS[3], served)
end
return moved
