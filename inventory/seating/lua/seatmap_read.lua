-- Read a tier's rendered seat map in one round trip: the stored map, the
-- current version, and, when the stored map is not current, whether this
-- caller takes the right to rebuild it (a short lock that also throttles
-- rebuilds: while it lives, everyone else serves the stored map).
--
-- A stored map ("<version>:<built at, ms>:<body>") is current while its
-- version is the version key's AND it was built less than ARGV[2] ms ago.
-- The version alone cannot be trusted: a change whose bump was lost, or an
-- older snapshot of both keys restored, leaves a map that matches its
-- version and not Postgres. The age bounds how long any such fault shows.
--
-- The caller that rebuilds is handed a version no stored map has: the
-- version key moves on (as seatmap_bump.lua moves it) when it is missing,
-- or when the stored map is at it (too old, or restored with it) or past it
-- (the version key went back): a rebuild written at a version below the
-- stored map's would be refused, and the stale map served on.
-- KEYS[1] map, KEYS[2] version, KEYS[3] rebuild lock,
-- ARGV[1] lock ttl (ms), ARGV[2] the age (ms) at which a map is rebuilt
local map = redis.call('GET', KEYS[1])
local version = redis.call('GET', KEYS[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local stored, built
if map then
  stored, built = string.match(map, '^(%d+):(%d+):')
end
local fresh = false
if stored and version and stored == version then
  local age = now - tonumber(built)
  fresh = age >= 0 and age < tonumber(ARGV[2])
end
local rebuild = 0
if not fresh and redis.call('SET', KEYS[3], '1', 'NX', 'PX', tonumber(ARGV[1])) then
  rebuild = 1
  local current = tonumber(version or '0')
  local at = tonumber(stored or '-1')
  if not version or at >= current then
    local moved = math.max(math.max(current, at) + 1, now)
    redis.call('SET', KEYS[2], moved)
    version = tostring(moved)
  end
end
return {map or false, version or false, rebuild}
