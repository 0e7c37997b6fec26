-- Force the counter to Postgres truth minus the reservations still in flight
-- (claims that took tickets in Redis and have not committed yet), plus the
-- tickets given back since the caller read the returned tally (releases that
-- committed after its Postgres snapshot: that snapshot still counts them as
-- held). Dropped first: reservations older than the cut-off (their process
-- died before committing) and reservations whose claim Postgres already shows
-- committed (their process died between the commit and finishing the
-- reservation): Postgres truth already counts those tickets as taken.
-- KEYS[1] counter, KEYS[2] in-flight zset, KEYS[3] returned tally (hash)
-- ARGV[1] free tickets in Postgres, ARGV[2] cut-off (ms), ARGV[3] tier id,
-- ARGV[4] the tier's returned tally read before the snapshot began,
-- ARGV[5..] committed members
-- Returns {previous value or -1 if missing, new value}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
for i = 5, #ARGV do
  redis.call('ZREM', KEYS[2], ARGV[i])
end
local inflight = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  inflight = inflight + tonumber(string.match(member, ':(%d+)$'))
end
local returned = tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0')
local since = returned - tonumber(ARGV[4])
if since < 0 then
  -- The tally was wiped (a Redis flush) after the caller read it: everything
  -- tallied now came later.
  since = returned
end
local target = tonumber(ARGV[1]) - inflight + since
if target < 0 then
  target = 0
end
local previous = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], target)
return {previous and tonumber(previous) or -1, target}
