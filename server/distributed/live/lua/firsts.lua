-- firsts.lua reads the earliest deadline of a license that the cleaner may
-- still have to see (live or expiring, min_deadline), so that the
-- reconciliation can re-derive an expiry hint that was lost (a crash
-- between a grant and its hint.lua, a hint.lua that failed, hint keys
-- lost with a Redis server). Changes nothing.
-- Returns {'NOCONF'} or {'OK', earliest deadline (-1 = none, or deleted)}.
local conf = load_conf(2)
if not conf then
  return {'NOCONF'}
end
if conf.deleted then
  return {'OK', -1}
end
return {'OK', min_deadline()}
