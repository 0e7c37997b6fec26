-- Every tick of a live event, admitting or not: move the customers Postgres
-- has just admitted from the waiting line to the admitted set (atomically:
-- nobody sees them in both or in neither), keep the served counter, record
-- the tick for the measured admission rate when it could admit, and say
-- whether Redis is behind Postgres and whether it holds the whole line.
--
-- The served total comes from Postgres (counted under the event's row lock),
-- so a counter re-made from Postgres after a flush is never counted twice;
-- it only ever grows (two ticks' scripts may arrive out of order). Redis'
-- counter below Postgres' total before this batch means an earlier batch
-- never reached Redis (a tick stopped between its commit and this script, or
-- Redis lost the counter): "behind". The counter then stays where it is until
-- the tick has put the admitted set right (readmit.lua), so a crash before
-- that is found again by the next tick.
-- KEYS[1] waiting zset, KEYS[2] admitted zset, KEYS[3] served counter,
-- KEYS[4] tick samples list, KEYS[5] admission rate, KEYS[6] line marker
-- ARGV[1] admission expiry (ms), ARGV[2] now (ms), ARGV[3] tick duration (ms),
-- ARGV[4] interval (ms), ARGV[5] rate window (ms), ARGV[6] served total in
-- Postgres (this batch included), ARGV[7] 1 to record a rate sample (the tick
-- could admit), ARGV[8..] customer ids
-- Returns {served total as Redis has it (-1: none), rate as a string or false,
--          1 when behind, 1 when the line marker exists, customers waiting}
local n = #ARGV - 7
for i = 8, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
end
local served = tonumber(ARGV[6])
local current = tonumber(redis.call('GET', KEYS[3]) or '-1')
local behind = 0
if current < served - n then
  behind = 1
  served = current
elseif current > served then
  served = current
else
  redis.call('SET', KEYS[3], served)
end
local line = redis.call('EXISTS', KEYS[6])
local waiting = redis.call('ZCARD', KEYS[1])
if ARGV[7] ~= '1' then
  return {served, redis.call('GET', KEYS[5]), behind, line, waiting}
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
return {served, text, behind, line, waiting}
