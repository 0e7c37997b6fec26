-- A tier's seat map changed: its version moves on to max(version + 1, now in
-- ms). Versions only grow, even when Redis was wiped (the clock carries on
-- where the counter was lost), so a client never mistakes an old map for a
-- new one.
-- KEYS[1] version, ARGV[1] now (ms)
local now = tonumber(ARGV[1])
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v < now then v = now else v = v + 1 end
redis.call('SET', KEYS[1], v)
return v
