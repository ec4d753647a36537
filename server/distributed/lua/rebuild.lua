-- rebuild.lua replaces the live state of the license with the one read
-- from PostgreSQL, unless a state of the same or a newer epoch is there
-- already (another rebuild won) or the license is deleted.
-- ARGV: 1 epoch, 2 version, 3 seats, 4 overdraft, 5 ttl, 6 revival,
--       7 active (0/1), 8 expires (0 = never), 9 strategy, 10 tenant,
--       11 license json, then per lease 8 values: id, token hash,
--       acquired, last_hb, deadline, dedupe key, idempotency key, token seq
--       (ordered by acquisition, so that the newest lease wins a key).
-- Returns {'SKIP'} or {'OK', min deadline (-1 = none)}.
local cur = redis.call('HMGET', K_CONF, 'epoch', 'deleted')
if cur[2] == '1' or (cur[1] and tonumber(cur[1]) >= tonumber(ARGV[1])) then
  return {'SKIP'}
end
redis.call('DEL', K_CONF, K_LEASES, K_DL, K_DEDUPE, K_IDEM, K_EXP)
redis.call('HSET', K_CONF, 'epoch', ARGV[1], 'version', ARGV[2], 'seats', ARGV[3],
  'overdraft', ARGV[4], 'ttl', ARGV[5], 'revival', ARGV[6], 'active', ARGV[7],
  'exp', ARGV[8], 'strategy', ARGV[9], 'tenant', ARGV[10], 'json', ARGV[11], 'deleted', '0')
for i = 12, #ARGV, 8 do
  local id = ARGV[i]
  local r = {ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]),
    ARGV[i + 5], ARGV[i + 6], tonumber(ARGV[i + 7])}
  put_rec(K_LEASES, id, r)
  redis.call('ZADD', K_DL, ARGV[i + 4], id)
  if r[DEDUPE] ~= '' then
    redis.call('HSET', K_DEDUPE, r[DEDUPE], id)
  end
  if r[IDEM] ~= '' then
    redis.call('HSET', K_IDEM, r[IDEM], id)
  end
end
return {'OK', min_deadline()}
