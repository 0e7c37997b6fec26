-- Everything the position endpoint needs about one customer, in one round trip.
-- The rank only while the line marker says the waiting set holds the whole
-- line (after a wipe, until the rebuild, the set may hold only new joiners).
-- The epoch is 1 once the pre-queue draw reached the set (the shuffled
-- marker): the rank and score are the drawn ones.
-- KEYS[1] waiting zset, KEYS[2] admitted zset, KEYS[3] admission rate, KEYS[4] served counter,
-- KEYS[5] line marker, KEYS[6] shuffled marker
-- ARGV[1] customer id
-- Returns {rank or false, admission expiry (ms) or false, rate or false, served or false,
--          score or false, epoch}
local rank = false
local score = false
if redis.call('EXISTS', KEYS[5]) == 1 then
  rank = redis.call('ZRANK', KEYS[1], ARGV[1])
  score = redis.call('ZSCORE', KEYS[1], ARGV[1])
end
return {
  rank,
  redis.call('ZSCORE', KEYS[2], ARGV[1]),
  redis.call('GET', KEYS[3]),
  redis.call('GET', KEYS[4]),
  score,
  redis.call('EXISTS', KEYS[6]),
}
