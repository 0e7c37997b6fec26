-- Return released tickets to a tier counter, only if the counter exists: a
-- missing counter is rebuilt from Postgres on the next miss, and creating it
-- here would make Redis show fewer free tickets than there are.
-- Every give-back is also tallied per tier (counter or not): a sync that read
-- Postgres before this release committed adds what was given back since it
-- began, instead of overwriting it (sync.lua). And the reservations that had
-- taken these tickets leave the recently-committed set: their rows can now be
-- taken by another reservation, after which a sync could not tell that they
-- committed.
-- Idempotent per call: when its reply is lost to a timeout, redis-py sends the
-- same call again (same mark key), and that run adds nothing: counting the
-- tickets twice would show more free than Postgres has.
-- KEYS[1] counter, KEYS[2] returned tally (hash: tier id -> tickets given back),
-- KEYS[3] the tier's recently-committed zset, KEYS[4] this give-back's mark
-- ARGV[1] quantity, ARGV[2] tier id, ARGV[3] the mark's lifetime (ms),
-- ARGV[4..] reservation members
if not redis.call('SET', KEYS[4], '1', 'NX', 'PX', tonumber(ARGV[3])) then
  return tonumber(redis.call('GET', KEYS[1]) or -1)
end
for i = 4, #ARGV do
  redis.call('ZREM', KEYS[3], ARGV[i])
end
redis.call('HINCRBY', KEYS[2], ARGV[2], tonumber(ARGV[1]))
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
end
return -1
