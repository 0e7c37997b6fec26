-- Force the counter to Postgres truth minus the reservations still in flight
-- (claims that took tickets in Redis and have not committed yet). Dropped
-- first: reservations older than the cut-off (their process died before
-- committing) and reservations whose claim Postgres already shows committed
-- (their process died between the commit and finishing the reservation):
-- Postgres truth already counts those tickets as taken.
-- KEYS[1] counter, KEYS[2] in-flight zset
-- ARGV[1] free tickets in Postgres, ARGV[2] cut-off (ms), ARGV[3..] committed members
-- Returns {previous value or -1 if missing, new value}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
for i = 3, #ARGV do
  redis.call('ZREM', KEYS[2], ARGV[i])
end
local inflight = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  inflight = inflight + tonumber(string.match(member, ':(%d+)$'))
end
local target = tonumber(ARGV[1]) - inflight
if target < 0 then
  target = 0
end
local previous = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], target)
return {previous and tonumber(previous) or -1, target}
