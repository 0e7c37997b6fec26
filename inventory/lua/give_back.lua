-- Return released tickets to a tier counter, only if the counter exists: a
-- missing counter is rebuilt from Postgres on the next miss, and creating it
-- here would make Redis show fewer free tickets than there are.
-- KEYS[1] counter; ARGV[1] quantity
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
end
return -1
