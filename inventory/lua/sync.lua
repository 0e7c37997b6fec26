-- Force the counter to Postgres truth as the caller's snapshot saw it, made
-- right for everything that happened after that snapshot began:
--   - minus the reservations not committed in the snapshot: those still in
--     flight, and those that committed after it (moved to the
--     recently-committed set by unreserve.lua): the snapshot counts their
--     tickets as free;
--   - plus the tickets given back since the caller read the returned tally
--     (releases that committed after the snapshot: it counts them as held).
-- The reservations the snapshot shows committed (the caller lists them) are
-- not subtracted, but they stay visible: another sync, working from an older
-- snapshot that counted their tickets as free, may still run. One left in
-- the in-flight set (its process died between the commit and finishing it)
-- moves to the recently-committed set. Members older than the cut-off go:
-- their process died before committing, or they are long settled.
-- KEYS[1] counter, KEYS[2] in-flight zset, KEYS[3] returned tally (hash),
-- KEYS[4] recently-committed zset
-- ARGV[1] free tickets in Postgres, ARGV[2] cut-off (ms), ARGV[3] tier id,
-- ARGV[4] the tier's returned tally read before the snapshot began,
-- ARGV[5] now (ms), ARGV[6..] members the snapshot shows committed
-- Returns {previous value or -1 if missing, new value}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[2])
local seen = {}
for i = 6, #ARGV do
  seen[ARGV[i]] = true
  if redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[4], ARGV[5], ARGV[i])
  end
end
local held = 0
for _, key in ipairs({KEYS[2], KEYS[4]}) do
  for _, member in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    if not seen[member] then
      held = held + tonumber(string.match(member, ':(%d+)$'))
    end
  end
end
local returned = tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0')
local since = returned - tonumber(ARGV[4])
if since < 0 then
  -- The tally was wiped (a Redis flush) after the caller read it: everything
  -- tallied now came later.
  since = returned
end
local target = tonumber(ARGV[1]) - held + since
if target < 0 then
  target = 0
end
local previous = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], target)
return {previous and tonumber(previous) or -1, target}
