-- A token bucket for one identity, refilled and taken from atomically: a
-- function that token_bucket.lua and the position read (queueing's
-- position.lua) include. key: a hash {tokens, at}; capacity, tokens per ms,
-- now (ms, the caller's clock). Returns 0 when a token was taken, else the
-- ms until one is there (nothing taken or written: a refused request
-- neither counts nor delays the next).
local function bucket_take(key, capacity, per_ms, now)
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(state[1]) or capacity
  local at = tonumber(state[2]) or now
  -- Another server's clock a little ahead: no refill, never a negative one.
  local elapsed = math.max(0, now - at)
  tokens = math.min(capacity, tokens + elapsed * per_ms)
  if tokens < 1 then
    return math.max(1, math.ceil((1 - tokens) / per_ms))
  end
  redis.call('HSET', key, 'tokens', tostring(tokens - 1), 'at', tostring(math.max(at, now)))
  -- Gone once it would be full again: a full bucket is no bucket.
  redis.call('PEXPIRE', key, math.ceil(capacity / per_ms))
  return 0
end
