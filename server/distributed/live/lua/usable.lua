-- usable.lua judges whether the license may grant seats now, at the
-- store's clock (usable() in common.lua), and reads its settings version:
-- a feature's acquisition that no grant covers asks it, so that an
-- inactive or expired license says so first. It changes nothing.
-- Returns {'NOCONF'} | {'DELETED'} | {status ('' when usable, else
-- 'INACTIVE' | 'LICEXPIRED'), settings version}.
local v = redis.call('HMGET', K_CONF, 'epoch', 'deleted', 'active', 'exp', 'version')
if not v[1] then
  return {'NOCONF'}
end
if v[2] == '1' then
  return {'DELETED'}
end
local conf = {active = v[3] == '1', exp = tonumber(v[4] or '0')}
return {usable(conf, now_us()) or '', v[5] or '0'}
