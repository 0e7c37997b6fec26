-- Move customers Postgres has just admitted from the waiting line to the
-- admitted set (atomically: nobody sees them in both or in neither), count
-- them as served, and record the tick for the measured admission rate.
-- KEYS[1] waiting zset, KEYS[2] admitted zset, KEYS[3] served counter,
-- KEYS[4] tick samples list, KEYS[5] admission rate
-- ARGV[1] admission expiry (ms), ARGV[2] now (ms), ARGV[3] tick duration (ms),
-- ARGV[4] interval (ms), ARGV[5] rate window (ms), ARGV[6..] customer ids
-- Returns {served total or -1 when the counter is missing, rate as a string}
local n = #ARGV - 5
for i = 6, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
end
local served = -1
if redis.call('EXISTS', KEYS[3]) == 1 then
  served = redis.call('INCRBY', KEYS[3], n)
end
local now = tonumber(ARGV[2])
local interval = tonumber(ARGV[4])
local window = tonumber(ARGV[5])
redis.call('LPUSH', KEYS[4], now .. ':' .. n .. ':' .. ARGV[3])
redis.call('LTRIM', KEYS[4], 0, 199)
-- Rate over the ticks of the last window: admitted / time they covered.
local total, oldest = 0, now
for _, sample in ipairs(redis.call('LRANGE', KEYS[4], 0, -1)) do
  local ts, count = string.match(sample, '^(%d+):(%d+):')
  ts = tonumber(ts)
  if now - ts > window then
    break
  end
  total = total + tonumber(count)
  oldest = ts
end
local rate = total * 1000 / (now - oldest + interval)
local text = string.format('%.6f', rate)
redis.call('SET', KEYS[5], text, 'PX', window * 2)
return {served, text}
