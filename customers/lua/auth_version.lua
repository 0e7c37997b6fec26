-- "Sign out everywhere": raise the cached token version, never lower it.
-- KEYS[1]: the hash; ARGV[1]: the new version; ARGV[2]: ttl (s).
local current = tonumber(redis.call('HGET', KEYS[1], 'v') or '-1')
if current < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'v', ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 1
