-- Release a lock only if we still own it (the token we set it with).
-- KEYS[1] lock, ARGV[1] owner token. Returns 1 when released.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
