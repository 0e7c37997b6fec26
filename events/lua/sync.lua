-- Force the counter to Postgres truth minus the reservations still in flight
-- (claims that took tickets in Redis and have not committed yet), dropping
-- reservations older than the cut-off (their process died).
-- KEYS[1] counter, KEYS[2] in-flight zset
-- ARGV[1] free tickets in Postgres, ARGV[2] cut-off (ms)
-- Returns {previous value or -1 if missing, new value}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
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
