-- Everything the position endpoint needs about one customer, in one round trip.
-- The rank only while the line marker says the waiting set holds the whole
-- line (after a wipe, until the rebuild, the set may hold only new joiners).
-- The epoch is 1 once the pre-queue draw reached the set (the shuffled
-- marker): the rank and score are the drawn ones.
-- KEYS[1] waiting zset, KEYS[2] admitted zset, KEYS[3] admission rate, KEYS[4] served counter,
-- KEYS[5] line marker, KEYS[6] shuffled marker, optionally KEYS[7] a hash the caller
-- reads in the same round trip (the customer's sign-out state; one Redis, not a cluster)
-- ARGV[1] customer id, ARGV[2..] that hash's fields
-- Returns {rank or false, admission expiry (ms) or false, rate or false, served or false,
--          score or false, epoch[, {the hash's values}]}
local rank = false
local score = false
if redis.call('EXISTS', KEYS[5]) == 1 then
  rank = redis.call('ZRANK', KEYS[1], ARGV[1])
  score = redis.call('ZSCORE', KEYS[1], ARGV[1])
end
local answer = {
  rank,
  redis.call('ZSCORE', KEYS[2], ARGV[1]),
  redis.call('GET', KEYS[3]),
  redis.call('GET', KEYS[4]),
  score,
  redis.call('EXISTS', KEYS[6]),
}
if KEYS[7] then
  answer[7] = redis.call('HMGET', KEYS[7], unpack(ARGV, 2))
end
return answer
