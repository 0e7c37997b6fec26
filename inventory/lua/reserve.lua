-- Take `qty` tickets from a tier counter if enough are left, and remember the
-- reservation as in flight until the Postgres transaction has finished.
-- Optionally first takes the claimer's lock (SET NX PX) in the same round trip.
-- KEYS[1] counter, KEYS[2] in-flight zset, KEYS[3] (optional) lock
-- ARGV[1] qty, ARGV[2] reservation id, ARGV[3] now (ms),
-- ARGV[4] lock token, ARGV[5] lock ttl (ms) (with KEYS[3])
-- Returns the count left, -1 when the counter is missing (cache miss), -2 when
-- there are not enough tickets, -3 when the lock is held by someone else.
-- With a lock, -1 and -2 leave the lock taken (the caller releases it).
--
-- Idempotent: the same call run twice (the client's retry after a reply lost
-- to a timeout sends it again, same reservation id and lock token) takes the
-- tickets once, and is not refused by the lock its own first run took.
local member = ARGV[2] .. ':' .. ARGV[1]
if KEYS[3] then
  if not redis.call('SET', KEYS[3], ARGV[4], 'NX', 'PX', tonumber(ARGV[5])) then
    if redis.call('GET', KEYS[3]) ~= ARGV[4] then
      return -3
    end
  end
end
if redis.call('ZSCORE', KEYS[2], member) then
  -- Reserved by this call's first run: answer as it did (as near as the
  -- counter allows: others may have moved it since).
  return math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), 0)
end
local left = redis.call('GET', KEYS[1])
if not left then
  return -1
end
local qty = tonumber(ARGV[1])
left = tonumber(left)
if left < qty then
  return -2
end
redis.call('ZADD', KEYS[2], ARGV[3], member)
return redis.call('DECRBY', KEYS[1], qty)
