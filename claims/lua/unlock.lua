-- Delete a lock only if it still holds our token: a lock that expired and was
-- taken by someone else must not be released by us.
-- KEYS[1] lock; ARGV[1] token
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
