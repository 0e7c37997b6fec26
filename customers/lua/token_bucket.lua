-- Take a token from one identity's bucket (bucket_take.lua).
-- KEYS[1]: the bucket. ARGV: capacity, tokens per ms, now (ms).
--! include bucket_take.lua
return bucket_take(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
