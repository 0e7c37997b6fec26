-- Move customers Postgres has just admitted from the waiting line to the
-- admitted set (atomically: nobody sees them in both or in neither), set the
-- served counter, and record the tick for the measured admission rate.
-- The served total comes from Postgres (counted under the event's row lock),
-- so a counter re-made from Postgres after a flush is never counted twice;
-- it only ever grows (two ticks' scripts may arrive out of order).
-- KEYS[1] waiting zset, KEYS[2] admitted zset, KEYS[3] served counter,
-- KEYS[4] tick samples list, KEYS[5] admission rate
-- ARGV[1] admission expiry (ms), ARGV[2] now (ms), ARGV[3] tick duration (ms),
-- ARGV[4] interval (ms), ARGV[5] rate window (ms), ARGV[6] served total in
-- Postgres, ARGV[7..] customer ids
-- Returns {served total, rate as a string}
local n = #ARGV - 6
for i = 7, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
end
local served = tonumber(ARGV[6])
local current = tonumber(redis.call('GET', KEYS[3]) or '-1')
if current > served then
  served = current
else
  redis.call('SET', KEYS[3], served)
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
