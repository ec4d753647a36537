-- state.lua reports the epoch of the live state ('' if absent), whether the
-- license is marked deleted, the version of the settings, and the time.
local v = redis.call('HMGET', K_CONF, 'epoch', 'deleted', 'version')
return {v[1] or '', v[2] or '0', v[3] or '0', now_us()}
