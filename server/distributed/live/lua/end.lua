-- end.lua removes ended leases (released, revoked, or recorded as
-- expired) from the live state and from the expiring set, and remembers
-- each end for ENDED_KEEP (K_ENDED) so that a rebuild racing the end cannot
-- bring the lease back (rebuild.lua). Idempotent. A borrowed lease ended
-- before its deadline (returned early: the only such end of a live
-- borrowed lease but a license's deletion) stays in the borrowed set until
-- its deadline, counted against the borrow cap (borrowed_count).
-- ARGV: lease ids. Returns the number of records removed.
local now = now_us()
local n = 0
for i = 1, #ARGV do
  local id = ARGV[i]
  local r = get_rec(K_LEASES, id)
  if r then
    unlink(id, r)
    if r[BOR] and r[DL] > now then
      redis.call('ZADD', K_BOR, fmt(r[DL]), id)
    end
    n = n + 1
  end
  n = n + redis.call('HDEL', K_EXP, id)
  redis.call('ZADD', K_ENDED, fmt(now), id)
end
redis.call('ZREMRANGEBYSCORE', K_ENDED, '-inf', '(' .. fmt(now - ENDED_KEEP))
return n
