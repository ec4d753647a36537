-- end.lua removes ended leases (released, revoked, or recorded as
-- expired) from the live state and from the expiring set. Idempotent.
-- ARGV: lease ids. Returns the number of records removed.
local n = 0
for i = 1, #ARGV do
  local id = ARGV[i]
  local r = get_rec(K_LEASES, id)
  if r then
    unlink(id, r)
    n = n + 1
  end
  n = n + redis.call('HDEL', K_EXP, id)
end
return n
