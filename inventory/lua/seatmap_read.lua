-- Read a tier's rendered seat map in one round trip: the stored map, the
-- current version, and, when the map is missing or older than the version,
-- whether this caller takes the right to rebuild it (a short lock that also
-- throttles rebuilds: while it lives, everyone else serves the older map).
-- KEYS[1] map, KEYS[2] version, KEYS[3] rebuild lock, ARGV[1] lock ttl (ms)
local map = redis.call('GET', KEYS[1])
local version = redis.call('GET', KEYS[2])
local rebuild = 0
local fresh = false
if map and version then
  local colon = string.find(map, ':', 1, true)
  fresh = colon and string.sub(map, 1, colon - 1) == version
end
if not fresh then
  if redis.call('SET', KEYS[3], '1', 'NX', 'PX', tonumber(ARGV[1])) then
    rebuild = 1
  end
end
return {map or false, version or false, rebuild}
