-- check.lua judges a release: the token first, then whether the lease is
-- still live. It changes nothing; the caller records the release in
-- PostgreSQL and then calls end.lua.
-- ARGV: 1 lease id, 2 token hash.
-- Returns {'NOCONF'} | {'DELETED'} | {'NOLEASE'} | {'TOKEN'} | {'EXPIRED'}
--   | {'LIVE', now, acquired, last_hb, deadline}
local conf = load_conf()
if not conf then
  return {'NOCONF'}
end
if conf.deleted then
  return {'DELETED'}
end
local id, tok = ARGV[1], ARGV[2]
local r = get_rec(K_LEASES, id)
if not r then
  local x = get_rec(K_EXP, id)
  if not x then
    return {'NOLEASE'}
  end
  if x[TOK] ~= tok then
    return {'TOKEN'}
  end
  return {'EXPIRED'}
end
if r[TOK] ~= tok then
  return {'TOKEN'}
end
local now = now_us()
if r[DL] <= now then
  return {'EXPIRED'}
end
return {'LIVE', now, r[ACQ], r[HB], r[DL]}
