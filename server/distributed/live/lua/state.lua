-- state.lua reports the epoch of the live state ('' if absent), whether the
-- license is marked deleted, the version of the settings, the time, the
-- incarnation of the license's keys (KEYS[9] is set to ARGV[1] unless it
-- holds a value already: a Redis that restarted empty or lost the keys has
-- a new incarnation, and rebuild.lua refuses to write a snapshot read in
-- another one), and the rebuild under way, if any: its epoch ('' if none),
-- how long ago (µs) it last made progress, and whether it has begun
-- writing (1) or is still reading its snapshot (0) (KEYS[10], see
-- rebuild.lua and progress.lua).
-- KEYS: ../keys.go RebuildKeys.
local v = redis.call('HMGET', K_CONF, 'epoch', 'deleted', 'version')
redis.call('SET', KEYS[9], ARGV[1], 'NX')
local now = now_us()
local p = redis.call('HMGET', KEYS[10], 'epoch', 'touched', 'began')
local age = 0
if p[1] then
  age = now - tonumber(p[2] or '0')
end
local begun = 0
if p[3] then
  begun = 1
end
return {v[1] or '', v[2] or '0', v[3] or '0', now, redis.call('GET', KEYS[9]), p[1] or '', age, begun}
