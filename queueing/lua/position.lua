-- Everything the position endpoint needs about one customer, in one round trip.
-- The rank only while the line marker says the waiting set holds the whole
-- line (after a wipe, until the rebuild, the set may hold only new joiners).
-- The epoch is 1 once the pre-queue draw reached the set (the shuffled
-- marker): the rank and score are the drawn ones.
-- KEYS[1] waiting zset, KEYS[2] admitted zset, KEYS[3] admission rate, KEYS[4] served counter,
-- KEYS[5] line marker, KEYS[6] shuffled marker; optionally (one Redis, not a cluster)
-- KEYS[7] a hash the caller reads in the same round trip (the customer's sign-out state)
-- and KEYS[8] the customer's read bucket, taken from in the same round trip.
-- ARGV[1] customer id; with KEYS[7]: ARGV[2..4] the bucket's capacity, tokens per ms
-- and now (ms), ARGV[5..] the hash's fields.
-- Returns {rank or false, admission expiry (ms) or false, rate or false, served or false,
--          score or false, epoch[, {the hash's values}, the bucket's wait (ms)]}.
-- An empty bucket (wait > 0) reads no place: the first six are false and 0.
--! include ../../customers/lua/bucket_take.lua
local wait = 0
if KEYS[8] then
  wait = bucket_take(KEYS[8], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
end
local answer
if wait > 0 then
  answer = {false, false, false, false, false, 0}
else
  local rank = false
  local score = false
  if redis.call('EXISTS', KEYS[5]) == 1 then
    rank = redis.call('ZRANK', KEYS[1], ARGV[1])
    score = redis.call('ZSCORE', KEYS[1], ARGV[1])
  end
  answer = {
    rank,
    redis.call('ZSCORE', KEYS[2], ARGV[1]),
    redis.call('GET', KEYS[3]),
    redis.call('GET', KEYS[4]),
    score,
    redis.call('EXISTS', KEYS[6]),
  }
end
if KEYS[7] then
  answer[7] = redis.call('HMGET', KEYS[7], unpack(ARGV, 5))
  answer[8] = wait
end
return answer
