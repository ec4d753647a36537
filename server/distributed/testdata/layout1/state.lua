-- state.lua reports the epoch of the live state ('' if absent), whether the
-- license is marked deleted, the version of the settings, the time, and
-- the incarnation of the license's keys: KEYS[9] is set to ARGV[1] unless it
-- holds a value already. A Redis that restarted empty or lost the keys has
-- a new incarnation; rebuild.lua refuses to write a snapshot read in
-- another one.
local v = redis.call('HMGET', K_CONF, 'epoch', 'deleted', 'version')
redis.call('SET', KEYS[9], ARGV[1], 'NX')
return {v[1] or '', v[2] or '0', v[3] or '0', now_us(), redis.call('GET', KEYS[9])}
