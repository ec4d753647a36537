-- count.lua counts the live leases of the license (invariant 2).
-- Returns {'NOCONF'} or {'OK', tenant, deleted (0/1), live count}.
local conf = load_conf()
if not conf then
  return {'NOCONF'}
end
local deleted = 0
if conf.deleted then
  deleted = 1
end
return {'OK', conf.tenant, deleted, live_count(now_us())}
