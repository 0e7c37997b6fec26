-- A token bucket for one identity, refilled and taken from atomically.
-- KEYS[1]: the bucket, a hash {tokens, at}. ARGV: capacity, tokens per ms,
-- now (ms, the caller's clock). Returns 0 when a token was taken, else the
-- ms until one is there (nothing taken or written: a refused request
-- neither counts nor delays the next).
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
-- Another server's clock a little ahead: no refill, never a negative one.
local elapsed = math.max(0, now - at)
tokens = math.min(capacity, tokens + elapsed * per_ms)
if tokens < 1 then
  return math.max(1, math.ceil((1 - tokens) / per_ms))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'at', tostring(math.max(at, now)))
-- Gone once it would be full again: a full bucket is no bucket.
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / per_ms))
return 0
