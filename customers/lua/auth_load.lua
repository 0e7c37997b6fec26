-- Cache a customer's sign-out state read from Postgres. KEYS[1]: the hash;
-- ARGV[1]: token version, ARGV[2]: ttl (s), ARGV[3..]: revoked jtis.
-- The version is only set when absent: a bump that raced ahead of this
-- (slower) read must not be undone by its older value.
redis.call('HSETNX', KEYS[1], 'v', ARGV[1])
for i = 3, #ARGV do
  redis.call('HSET', KEYS[1], 'r:' .. ARGV[i], '1')
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
