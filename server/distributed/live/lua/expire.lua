-- expire.lua moves the named leases that are still past their deadline
-- from the live state into the expiring hash, and returns them together
-- with the named leases already in the expiring hash (a retried batch).
-- A lease a heartbeat renewed meanwhile is left alone. Nothing is
-- forgotten: a lease leaves the expiring hash only after its expiry is
-- recorded in PostgreSQL (end.lua).
-- ARGV: lease ids.
-- Returns {'NOCONF'} or {'OK', now, id, acquired, last_hb, deadline,
-- lingering (1: a lapsed linger, server/linger.go; else 0), ...}.
if redis.call('HEXISTS', K_CONF, 'epoch') == 0 then
  return {'NOCONF'} -- as load_conf: no live state (the settings are not needed)
end
local now = now_us()
local out = {'OK', now}
for i = 1, #ARGV do
  local id = ARGV[i]
  local raw = redis.call('HGET', K_LEASES, id)
  local r = nil
  if raw then
    r = unpack_rec(raw)
    if r[DL] <= now then
      unlink(id, r)
      redis.call('HSET', K_EXP, id, raw)
    else
      r = nil
    end
  else
    r = get_rec(K_EXP, id)
  end
  if r then
    out[#out + 1] = id
    out[#out + 1] = r[ACQ]
    out[#out + 1] = r[HB]
    out[#out + 1] = r[DL]
    out[#out + 1] = r[LINGER] or 0
  end
end
return out
