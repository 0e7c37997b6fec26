-- Cache a customer's sign-out state read from Postgres (auth_fill.lua).
-- KEYS[1]: the hash; ARGV[1]: token version, ARGV[2]: ttl (s), ARGV[3..]: revoked jtis.
--! include auth_fill.lua
auth_fill(KEYS[1], ARGV[1], ARGV[2], {unpack(ARGV, 3)})
return 1
