-- Everything the position endpoint needs about one customer, in one round trip.
-- KEYS[1] waiting zset, KEYS[2] admitted zset, KEYS[3] admission rate, KEYS[4] served counter
-- ARGV[1] customer id
-- Returns {rank or false, admission expiry (ms) or false, rate or false, served or false,
--          1 when the waiting set exists}
return {
  redis.call('ZRANK', KEYS[1], ARGV[1]),
  redis.call('ZSCORE', KEYS[2], ARGV[1]),
  redis.call('GET', KEYS[3]),
  redis.call('GET', KEYS[4]),
  redis.call('EXISTS', KEYS[1]),
}
