-- rebuild.lua builds the live state of the license at a new epoch from
-- the active sessions read from PostgreSQL, merged with what Redis still
-- holds, unless a state of the same or a newer epoch is there already
-- (another rebuild won) or the license is deleted.
--
-- The merge keeps every observed end final (a rebuild never brings back a
-- lease that ended or lapsed) and every acknowledged deadline:
--   - a lease end.lua removed after the snapshot was read (K_ENDED), or that
--     waits in the expiring hash, is not made live again;
--   - a lease Redis still holds keeps its values there (they are newer
--     than the record's: heartbeats are written behind), with the newer
--     token of the two;
--   - a lease Redis does not hold gets its recorded values, and, only when
--     Redis lost the license's state (no settings), its recorded deadline
--     plus the slack that covers heartbeats not yet written behind;
--   - a lease Redis holds that the snapshot lacks is dropped: it was never
--     recorded, and the new epoch makes sure it never will be.
-- A snapshot older than REBUILD_MAX_AGE is refused (K_ENDED may have
-- forgotten ends that happened after it), and so is one read while the
-- license's keys had another incarnation (KEYS[9], see state.lua): Redis
-- lost them since, and with them the ends K_ENDED remembered. The caller
-- reads a new one.
-- ARGV: 1 epoch, 2 version, 3 seats, 4 overdraft, 5 ttl, 6 revival,
--       7 active (0/1), 8 expires (0 = never), 9 strategy, 10 tenant,
--       11 license json, 12 max borrow duration, 13 max borrowed seats,
--       14 snapshot time (Redis time read before the snapshot), 15 slack,
--       16 incarnation, then per lease 9 values: id, token hash,
--       acquired, last_hb, deadline, dedupe key, idempotency key, token
--       seq, borrowed (0/1) (ordered by acquisition, so that the newest
--       lease wins a key). A borrowed lease gets no slack: no heartbeat of
--       it can be lost.
-- Returns {'SKIP'} | {'STALE'} | {'OK', min deadline (-1 = none)}.
local cur = redis.call('HMGET', K_CONF, 'epoch', 'deleted')
if cur[2] == '1' or (cur[1] and tonumber(cur[1]) >= tonumber(ARGV[1])) then
  return {'SKIP'}
end
local now = now_us()
if now - tonumber(ARGV[14]) > REBUILD_MAX_AGE or redis.call('GET', KEYS[9]) ~= ARGV[16] then
  return {'STALE'}
end
local lost = not cur[1]
local slack = tonumber(ARGV[15])
local held = {}
local all = redis.call('HGETALL', K_LEASES)
for i = 1, #all, 2 do
  held[all[i]] = cmsgpack.unpack(all[i + 1])
end
redis.call('DEL', K_CONF, K_LEASES, K_DL, K_DEDUPE, K_IDEM, K_BOR)
redis.call('HSET', K_CONF, 'epoch', ARGV[1], 'version', ARGV[2], 'seats', ARGV[3],
  'overdraft', ARGV[4], 'ttl', ARGV[5], 'revival', ARGV[6], 'active', ARGV[7],
  'exp', ARGV[8], 'strategy', ARGV[9], 'tenant', ARGV[10], 'json', ARGV[11], 'deleted', '0',
  'maxborrow', ARGV[12], 'maxborrowed', ARGV[13])
for i = 17, #ARGV, 9 do
  local id = ARGV[i]
  if not redis.call('ZSCORE', K_ENDED, id) and redis.call('HEXISTS', K_EXP, id) == 0 then
    local r = {ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]),
      ARGV[i + 5], ARGV[i + 6], tonumber(ARGV[i + 7])}
    if ARGV[i + 8] == '1' then
      r[BOR] = 1
      r[IDEM] = idem_key(r[IDEM], true)
    end
    local h = held[id]
    if h then
      if r[SEQ] > h[SEQ] then
        h[TOK], h[SEQ] = r[TOK], r[SEQ]
      end
      h[HB] = math.max(h[HB], r[HB])
      r = h -- Redis's deadline is the one last told (a TTL lowered since
            -- may have made it earlier than the recorded one)
    elseif lost and not r[BOR] then
      r[DL] = r[DL] + slack
    end
    put_rec(K_LEASES, id, r)
    redis.call('ZADD', K_DL, fmt(r[DL]), id)
    if r[DEDUPE] ~= '' then
      redis.call('HSET', K_DEDUPE, r[DEDUPE], id)
    end
    if r[IDEM] ~= '' then
      redis.call('HSET', K_IDEM, r[IDEM], id)
    end
    if r[BOR] then
      redis.call('ZADD', K_BOR, fmt(r[DL]), id)
    end
  end
end
return {'OK', min_deadline()}
