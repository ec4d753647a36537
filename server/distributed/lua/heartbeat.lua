-- heartbeat.lua renews a lease that is still in the live state: update
-- only, never creates one. Strict expiry (invariant 3): a lease at or past
-- its deadline is renewed only within the revival window and only if a
-- seat is free.
-- ARGV: 1 lease id, 2 token hash.
-- Returns {'NOCONF'} | {'DELETED'} | {'NOLEASE'} | {'TOKEN'} | {'EXPIRED'}
--   | {'INACTIVE'} | {'LICEXPIRED'}
--   | {'OK', acquired, last_hb, deadline, previous first deadline}
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
  return {'EXPIRED'} -- being recorded as expired: never revived
end
if r[TOK] ~= tok then
  return {'TOKEN'}
end
local now = now_us()
if r[DL] <= now then
  if not (conf.revival > 0 and now < r[DL] + conf.revival
      and live_count(now) < conf.seats + conf.overdraft) then
    return {'EXPIRED'}
  end
end
local bad = usable(conf, now)
if bad then
  return {bad}
end
local prev = first_deadline()
r[HB] = now
r[DL] = now + conf.ttl
put_rec(K_LEASES, id, r)
redis.call('ZADD', K_DL, fmt(r[DL]), id)
return {'OK', r[ACQ], r[HB], r[DL], prev}
