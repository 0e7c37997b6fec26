-- Put a customer in the waiting line and answer in the same round trip.
-- A tick may already have admitted them (their Postgres row was committed
-- before this add, and the tick moved them to the admitted set): then they
-- stay out of the line, or they would show as waiting while admitted.
-- The rank counts only while the line marker says the set holds the whole
-- line; without it (Redis was wiped and the line is not rebuilt yet) the
-- customer is added all the same and the caller answers from Postgres.
-- KEYS[1] waiting zset, KEYS[2] admission rate, KEYS[3] served counter, KEYS[4] admitted zset,
-- KEYS[5] line marker, KEYS[6] shuffled marker (the epoch: 1 once the pre-queue draw reached Redis);
-- optionally (one Redis, not a cluster) KEYS[7] the customer's sign-out state, cached in the
-- same round trip as the join's INSERT read it (customers/lua/auth_fill.lua)
-- ARGV[1] score (the QueueEntry.score already committed to Postgres), ARGV[2] customer id;
-- with KEYS[7]: ARGV[3] token version, ARGV[4] ttl (s), ARGV[5..] revoked jtis
-- Returns {rank (0-based) or -1 when already admitted, rate or false, served or false,
--          1 when the line marker exists, epoch}
--! include ../../customers/lua/auth_fill.lua
if KEYS[7] then
  auth_fill(KEYS[7], ARGV[3], ARGV[4], {unpack(ARGV, 5)})
end
local rank = -1
if not redis.call('ZSCORE', KEYS[4], ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
  rank = redis.call('ZRANK', KEYS[1], ARGV[2])
end
return {
  rank,
  redis.call('GET', KEYS[2]),
  redis.call('GET', KEYS[3]),
  redis.call('EXISTS', KEYS[5]),
  redis.call('EXISTS', KEYS[6]),
}
