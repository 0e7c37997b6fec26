-- Cache a customer's sign-out state read from Postgres: a function that
-- auth_load.lua and the queue join (queueing's join.lua) include. key: the
-- hash; version: the token version; ttl (s); revoked: the revoked jtis.
-- The version is only set when absent: a bump that raced ahead of this
-- (slower) read must not be undone by its older value.
local function auth_fill(key, version, ttl, revoked)
  redis.call('HSETNX', key, 'v', version)
  for _, jti in ipairs(revoked) do
    redis.call('HSET', key, 'r:' .. jti, '1')
  end
  redis.call('EXPIRE', key, ttl)
end
