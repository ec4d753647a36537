-- take.lua takes a lease granted to a waiter, and never confirmed, out of
-- the live state into the expiring hash, where it holds no seat and every
-- heartbeat is refused, but only while it is as granted: its last
-- heartbeat and deadline no later than the grant's (a heartbeat, or a
-- rebuild that gave time back, confirms it; so does its release, when it
-- lingers: server/linger.go). Judged and done in one step,
-- so that no heartbeat is acknowledged and then taken back. The caller
-- records the revocation and then calls end.lua; if it never does, the
-- lease waits in the expiring hash and is recorded as expired, as any.
-- ARGV: 1 lease id, 2 granted last_hb, 3 granted deadline.
-- Returns {'NOCONF'} or {'OK', now, status, last_hb, deadline} with status
-- 'TAKEN' | 'CONFIRMED' | 'NOLEASE' (not live: ended, or expiring; the
-- times are 0 then).
if redis.call('HEXISTS', K_CONF, 'epoch') == 0 then
  return {'NOCONF'} -- as expire.lua: no live state, nothing can be judged
end
local now = now_us()
local id = ARGV[1]
local raw = redis.call('HGET', K_LEASES, id)
if not raw then
  return {'OK', now, 'NOLEASE', 0, 0}
end
local r = unpack_rec(raw)
if r[LINGER] or r[HB] > tonumber(ARGV[2]) or r[DL] > tonumber(ARGV[3]) then
  return {'OK', now, 'CONFIRMED', r[HB], r[DL]}
end
unlink(id, r)
redis.call('HSET', K_EXP, id, raw)
return {'OK', now, 'TAKEN', r[HB], r[DL]}
