-- rebuild.lua builds the live state of the license at a new epoch from
-- the active sessions read from PostgreSQL, merged with what Redis still
-- holds, a chunk of leases per call, so that a license of hundreds of
-- thousands of leases never holds Redis (every other license's calls) for
-- longer than one chunk. Nothing it writes counts before the last call:
--   - the first call (flag F) takes the license's settings away, so that
--     every call on the license answers NOCONF (and waits for this
--     rebuild) instead of counting a partial lease set (invariant 1), and
--     notes the rebuild in the progress hash (KEYS[10]: epoch, whether
--     Redis had lost the state, when it began, when a call last came);
--   - every call writes its leases into the staging keys (KEYS[11..15]);
--   - the last call (flag L) gives the leases whose deadline came while
--     the settings were away the time they were away (their heartbeats
--     waited for the rebuild), CHUNK of them a call (it answers MORE until
--     none is left), then switches the staging keys in for the live ones
--     and writes the settings. A small license is one call (FL).
-- It refuses (SKIP) if a state of the same or a newer epoch is there or
-- the license is deleted, and SUPERSEDED if a rebuild of a newer epoch
-- has begun since: the caller gives up (a newer rebuild is under way).
--
-- The merge keeps every observed end final (a rebuild never brings back a
-- lease that ended or lapsed) and every acknowledged deadline:
--   - a lease end.lua removed after the snapshot was read (K_ENDED), or that
--     waits in the expiring hash, is not staged; one that ends after it
--     was staged (end.lua still runs on a state without settings) is
--     taken out of the staging by the last call (ends since the first);
--   - a lease Redis still holds keeps its values there (they are newer
--     than the record's: heartbeats are written behind; and no heartbeat
--     renews it while the settings are away), with the newer token of the
--     two;
--   - a lease Redis does not hold gets its recorded values, and, only when
--     Redis lost the license's state (no settings when the first call
--     came, and none taken away by an earlier rebuild), its recorded
--     deadline plus the slack that covers heartbeats not yet written
--     behind;
--   - a lease Redis holds that the snapshot lacks is not staged: it was
--     never recorded, and the new epoch makes sure it never will be.
-- Every call refuses a snapshot older than REBUILD_MAX_AGE (K_ENDED may
-- have forgotten ends that happened after it), or read while the
-- license's keys had another incarnation (KEYS[9], see state.lua): Redis
-- lost them since, and with them the ends K_ENDED remembered. The caller
-- reads a new one.
-- KEYS: ../keys.go RebuildKeys.
-- ARGV: 1 flags ('F' first, 'L' last, both, or ''), 2 epoch, 3 snapshot
--       time (Redis time read before the snapshot), 4 incarnation, 5
--       slack, 6 the number of values that follow (17 + 2K in the last
--       call, else 0): the settings (version, seats, overdraft, ttl,
--       revival, active (0/1), expires (0 = never), strategy, tenant,
--       license json, max borrow duration, max borrowed seats, starts,
--       policy generation, linger) and CHUNK, the caller's chunk
--       (../state.go DefaultRebuildChunk), then K and K pairs (lease id,
--       deadline) of the borrowed leases returned early; then per lease 9
--       values: id, token hash, acquired, last_hb, deadline, dedupe key,
--       idempotency key, token seq, kind (0, 1 borrowed, 2 lingering)
--       (ordered by acquisition, so that the newest lease wins a key). A
--       borrowed lease gets no slack: no heartbeat of it can be lost; nor
--       does a lingering one: its deadline was recorded with its release.
-- The last call also takes the marker of the license's policy index
-- (KEYS[26], ../keys.go Policy) away: the index was built over the live
-- states this rebuild replaces, and is built again before the next grant.
-- The keys of layout 1 (an older seatd: KEYS[16..24]) are fenced off by
-- the first call: the old settings hash becomes a string, on which every
-- script of an older seatd fails (WRONGTYPE, answered UNAVAILABLE) instead
-- of serving the license beside this layout; its leases are dropped, and
-- the ends it remembers since the snapshot are carried over.
-- Returns {'SKIP'} | {'STALE'} | {'SUPERSEDED'} | {'STAGED'} | {'MORE'} |
--   {'OK', min deadline (-1 = none)} (the last call).
local K_INC, K_PROG = KEYS[9], KEYS[10]
local S_LEASES, S_DL, S_DEDUPE, S_IDEM, S_BOR = KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15]
local L_CONF, L_ENDED = KEYS[16], KEYS[22]
local FENCE = 'seatd: this license is served from the keys {lic}:v2:*; an older seatd must not serve it'

-- legacy_key is a lease id of layout 1 (text) as layout 2 keeps it
-- (../ids.go leaseKey).
local CANONICAL = '^lse_' .. string.rep('[0-9a-f]', 24) .. '$'
local function legacy_key(id)
  if string.match(id, CANONICAL) then
    return (string.gsub(string.sub(id, 5), '..', function(h)
      return string.char(tonumber(h, 16))
    end))
  end
  if #id == 12 then
    return '\255' .. id
  end
  return id
end

-- unstage takes a lease out of the staging, with the dedupe and
-- idempotency entries that still point at it.
local STAGED = {S_LEASES, S_DL, S_DEDUPE, S_IDEM, S_BOR}
local function unstage(id, now)
  local raw = redis.call('HGET', S_LEASES, id)
  if raw then
    local r = unpack_rec(raw)
    unlink_from(STAGED, id, r)
    if r[BOR] and r[DL] > now then -- returned early: end.lua's rule
      redis.call('ZADD', S_BOR, fmt(r[DL]), id)
    end
  end
end
local flags, epoch, snap, inc, slack = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local nconf = tonumber(ARGV[6])
local first, last = string.find(flags, 'F', 1, true) ~= nil, string.find(flags, 'L', 1, true) ~= nil
local CHUNK = last and tonumber(ARGV[22]) -- leases given the time back a call

local cur = redis.call('HMGET', K_CONF, 'epoch', 'deleted')
if cur[2] == '1' or (cur[1] and tonumber(cur[1]) >= epoch) then
  return {'SKIP'}
end
local now = now_us()
if now - snap > REBUILD_MAX_AGE or redis.call('GET', K_INC) ~= inc then
  return {'STALE'}
end
local prog = redis.call('HMGET', K_PROG, 'epoch', 'lost', 'began')
local progEpoch = tonumber(prog[1] or '-1')
local lost
if first then
  if progEpoch > epoch then
    return {'SUPERSEDED'}
  end
  -- What a rebuild that died or was superseded staged is dropped.
  redis.call('UNLINK', S_LEASES, S_DL, S_DEDUPE, S_IDEM, S_BOR)
  -- An earlier rebuild that took the settings away knew whether Redis had
  -- lost the state; otherwise their absence says so.
  lost = not cur[1]
  if lost and prog[2] == '0' then
    lost = false
  end
  redis.call('HSET', K_PROG, 'epoch', fmt(epoch), 'lost', lost and '1' or '0', 'began', fmt(now), 'touched', fmt(now))
  if cur[1] then
    redis.call('DEL', K_CONF)
  end
  -- Layout 1: fenced, its leases dropped, its recent ends carried over.
  redis.call('UNLINK', L_CONF, KEYS[17], KEYS[18], KEYS[19], KEYS[20], KEYS[21], KEYS[23], KEYS[24])
  redis.call('SET', L_CONF, FENCE)
  local ends = redis.call('ZRANGEBYSCORE', L_ENDED, fmt(snap), '+inf', 'WITHSCORES')
  for j = 1, #ends, 2 do
    redis.call('ZADD', K_ENDED, ends[j + 1], legacy_key(ends[j]))
  end
else
  -- Settings back (someone else's rebuild won), or the staging is another's.
  if cur[1] or progEpoch ~= epoch then
    return {'SUPERSEDED'}
  end
  lost = prog[2] == '1'
  redis.call('HSET', K_PROG, 'touched', fmt(now))
end

-- The chunk's leases are written with one command per key (in order: a
-- later lease's dedupe or idempotency key wins, as it would one by one),
-- and what Redis holds is read only from the keys that exist: a rebuild
-- after Redis lost the state makes no read per lease.
local ended_any = redis.call('EXISTS', K_ENDED) == 1
local expiring_any = redis.call('EXISTS', K_EXP) == 1
local live_any = redis.call('EXISTS', K_LEASES) == 1
local recs, dls, dedupes, idems, bors = {}, {}, {}, {}, {}
local function push(t, a, b)
  t[#t + 1] = a
  t[#t + 1] = b
end
for i = 7 + nconf, #ARGV, 9 do
  local id = ARGV[i]
  local ended = ended_any and redis.call('ZSCORE', K_ENDED, id)
  if ended and ARGV[i + 8] == '1' and tonumber(ARGV[i + 4]) > now then
    push(bors, ARGV[i + 4], id) -- returned early after the snapshot: end.lua's rule
  end
  if not ended
    and not (expiring_any and redis.call('HEXISTS', K_EXP, id) == 1) then
    local r = {ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]),
      ARGV[i + 5], ARGV[i + 6], tonumber(ARGV[i + 7])}
    if ARGV[i + 8] == '1' then
      r[BOR] = 1
      r[IDEM] = idem_key(r[IDEM], true)
    elseif ARGV[i + 8] == '2' then
      r[LINGER] = 1
    end
    local h = live_any and get_rec(K_LEASES, id)
    if h then
      if r[SEQ] > h[SEQ] then
        h[TOK], h[SEQ] = r[TOK], r[SEQ]
      end
      h[HB] = math.max(h[HB], r[HB])
      r = h -- Redis's deadline is the one last told (a TTL lowered since
            -- may have made it earlier than the recorded one)
    elseif lost and not r[BOR] and not r[LINGER] then
      r[DL] = r[DL] + slack
    end
    push(recs, id, pack_rec(r))
    push(dls, fmt(r[DL]), id)
    if r[DEDUPE] ~= '' then
      push(dedupes, r[DEDUPE], id)
    end
    if r[IDEM] ~= '' then
      push(idems, r[IDEM], id)
    end
    if r[BOR] then
      push(bors, fmt(r[DL]), id)
    end
  end
end
if #recs > 0 then
  redis.call('HSET', S_LEASES, unpack(recs))
  redis.call('ZADD', S_DL, unpack(dls))
end
if #dedupes > 0 then
  redis.call('HSET', S_DEDUPE, unpack(dedupes))
end
if #idems > 0 then
  redis.call('HSET', S_IDEM, unpack(idems))
end
if #bors > 0 then
  redis.call('ZADD', S_BOR, unpack(bors))
end
if not last then
  return {'STAGED'}
end

-- Leases whose deadline came while the settings were away: their
-- heartbeats waited, so they get that time back (borrowed leases keep
-- their deadline: it is their certificate's). A lease given it is past
-- now, out of the window: the calls run out of leases to give it to.
local began = tonumber(redis.call('HGET', K_PROG, 'began'))
local away = now - began
local window = {'(' .. fmt(began), fmt(now)}
local nbor = redis.call('ZCOUNT', S_BOR, window[1], window[2])
local late = redis.call('ZRANGEBYSCORE', S_DL, window[1], window[2], 'LIMIT', 0, CHUNK + nbor)
local given = 0
for _, id in ipairs(late) do
  local r = get_rec(S_LEASES, id)
  if r and not r[BOR] and given < CHUNK then
    r[DL] = r[DL] + away
    redis.call('HSET', S_LEASES, id, pack_rec(r))
    redis.call('ZADD', S_DL, fmt(r[DL]), id)
    given = given + 1
  end
end
if redis.call('ZCOUNT', S_DL, window[1], window[2]) > nbor then
  redis.call('HSET', K_PROG, 'touched', fmt(now))
  return {'MORE'}
end

-- Leases that ended after they were staged (end.lua, of this seatd or of
-- an older one, runs without settings): out of the staging.
for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_ENDED, fmt(began), '+inf')) do
  unstage(id, now)
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', L_ENDED, fmt(began), '+inf')) do
  unstage(legacy_key(id), now)
end
-- The record's borrowed leases returned early, still before their
-- deadline (ARGV[23]: how many pairs of id, deadline follow): they count
-- against the borrow cap (end.lua).
for j = 24, 23 + 2 * tonumber(ARGV[23]), 2 do
  if tonumber(ARGV[j + 1]) > now then
    redis.call('ZADD', S_BOR, ARGV[j + 1], ARGV[j])
  end
end
-- The switch: the old live keys are freed in the background (UNLINK),
-- the staging keys renamed in (each O(1)), then the settings.
local live = {K_LEASES, K_DL, K_DEDUPE, K_IDEM, K_BOR}
redis.call('UNLINK', L_ENDED, unpack(live))
for j = 1, #live do
  if redis.call('EXISTS', STAGED[j]) == 1 then
    redis.call('RENAME', STAGED[j], live[j])
  end
end
redis.call('DEL', K_PROG)
local c = 7
redis.call('HSET', K_CONF, 'epoch', fmt(epoch), 'version', ARGV[c], 'seats', ARGV[c + 1],
  'overdraft', ARGV[c + 2], 'ttl', ARGV[c + 3], 'revival', ARGV[c + 4], 'active', ARGV[c + 5],
  'exp', ARGV[c + 6], 'strategy', ARGV[c + 7], 'tenant', ARGV[c + 8], 'json', ARGV[c + 9], 'deleted', '0',
  'maxborrow', ARGV[c + 10], 'maxborrowed', ARGV[c + 11], 'starts', ARGV[c + 12], 'policy', ARGV[c + 13],
  'linger', ARGV[c + 14])
redis.call('DEL', KEYS[26])
return {'OK', min_deadline()}
