-- Put a customer in the waiting line and answer in the same round trip.
-- KEYS[1] waiting zset, KEYS[2] admission rate, KEYS[3] served counter
-- ARGV[1] score (the QueueEntry.score already committed to Postgres), ARGV[2] customer id
-- Returns {rank (0-based), rate or false, served or false}
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return {redis.call('ZRANK', KEYS[1], ARGV[2]), redis.call('GET', KEYS[2]), redis.call('GET', KEYS[3])}
