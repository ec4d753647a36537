-- adopt.lua hands the cleaner leases that PostgreSQL holds as active past
-- their recorded deadline but that are in neither the live state nor the
-- expiring hash (e.g. an acquisition whose outcome was unknown and was
-- undone in Redis). They hold no seat; they go to the expiring hash so
-- that the next cleanup records them. Leases Redis knows are left alone.
-- ARGV: per lease 9 values: id, token hash, acquired, last_hb, deadline,
--       dedupe key, idempotency key, token seq, borrowed (not used here).
-- Returns {'NOCONF'} or {'OK', adopted, min deadline (-1 = none)}.
local conf = load_conf()
if not conf then
  return {'NOCONF'}
end
local n = 0
if not conf.deleted then
  for i = 1, #ARGV, 9 do
    local id = ARGV[i]
    if redis.call('HEXISTS', K_LEASES, id) == 0 and redis.call('HEXISTS', K_EXP, id) == 0 then
      put_rec(K_EXP, id, {ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]),
        tonumber(ARGV[i + 4]), ARGV[i + 5], ARGV[i + 6], tonumber(ARGV[i + 7])})
      n = n + 1
    end
  end
end
return {'OK', n, min_deadline()}
