-- setconf.lua applies new license settings to an existing live state, if
-- they are newer than the ones there. It never creates the live state: only
-- a rebuild does, so that settings never exist without their leases.
-- ARGV: 1 version, 2 seats, 3 overdraft, 4 ttl, 5 revival, 6 active (0/1),
--       7 expires (0 = never), 8 strategy, 9 tenant, 10 license json,
--       11 max borrow duration, 12 max borrowed seats, 13 starts (0 = at
--       once; a grant's pool), 14 policy generation ('' = no site policy),
--       15 linger (µs; 0 = none: server/linger.go).
-- Returns 'NOCONF', 'STALE' or 'OK'.
local cur = redis.call('HMGET', K_CONF, 'epoch', 'version', 'deleted')
if not cur[1] then
  return 'NOCONF'
end
if cur[3] == '1' or tonumber(cur[2] or '0') >= tonumber(ARGV[1]) then
  return 'STALE'
end
redis.call('HSET', K_CONF, 'version', ARGV[1], 'seats', ARGV[2], 'overdraft', ARGV[3],
  'ttl', ARGV[4], 'revival', ARGV[5], 'active', ARGV[6], 'exp', ARGV[7],
  'strategy', ARGV[8], 'tenant', ARGV[9], 'json', ARGV[10], 'maxborrow', ARGV[11], 'maxborrowed', ARGV[12], 'starts', ARGV[13], 'policy', ARGV[14],
  'linger', ARGV[15])
return 'OK'
