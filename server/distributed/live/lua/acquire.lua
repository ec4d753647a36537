-- acquire.lua grants a seat, or hands back the live lease of the same
-- idempotency key or dedupe key, in one atomic step (invariants 1, 2, 4).
-- It takes several acquisitions on the license at once (the ones that
-- arrived together, see ../batch.go) and judges each on its own, in order,
-- exactly as if it came alone: each counts the seats the ones before it
-- took.
-- ARGV: per acquisition, 12 values: lease id, token hash, idempotency key
--       ('' = none), borrow duration (µs; 0 = not a borrow), then 4 pairs
--       of (leasing strategy, dedupe key) computed by the caller for every
--       strategy; the license's current strategy picks one.
-- Returns one of, for all of them:
--   {'NOCONF'} | {'DELETED'} | {'POLICY'} | {'INACTIVE'} | {'LICEXPIRED'}
-- POLICY: the license has a site policy, which only acquire_pools.lua
-- judges (with the decision its caller passes): ask it instead.
-- else {'OK', license json, epoch, settings version, then for each
--   acquisition 12 values: status, lease id, acquired, last_hb, deadline,
--   token_seq, seats in use, previous first deadline, dedupe key, limit,
--   displaced (an array of lease ids, empty but for a grant), reclaimed
--   (1: the lease handed back was lingering, server/linger.go; else 0)}
-- with status 'NEW' | 'EXISTING' (all values set), 'EXHAUSTED' (seats in
-- use and limit set), 'NOBORROW' | 'BORROWLONG' | 'BORROWEXP' |
-- 'BORROWLIMIT' (a borrow the license refuses, judged at the time in
-- place of acquired; BORROWEXP: it would end after the license's expiry;
-- for the last, borrowed seats in use and their limit in place of seats
-- in use and limit), 'DUP', or 'ERR' (this
-- acquisition failed, the message in place of the lease id, nothing of it
-- written); unset values are 0 or ''. Lease ids are binary (common.lua).
--
-- A borrow (borrow duration > 0) makes a lease that lives until now +
-- that duration with no heartbeats: it has no dedupe key, its
-- idempotency key is kept apart (idem_key), and a retry hands it back
-- with its deadline unchanged.
--
-- Idempotent by request: the lease id is new for every call, so a call
-- replayed (a client library retrying after a timeout) that finds its
-- lease with its token answers NEW again instead of granting twice.
--
-- Observed ends are final: a lapsed lease still counts in the deadlines
-- set until the cleaner records it. A grant that needs such a lease's seat
-- (live count < limit <= live + lapsed) takes it out of the live state into
-- the expiring hash (no revival, no rebuild brings it back) and names it
-- in `displaced` (an array of ids): the caller records its expiry in
-- PostgreSQL before it answers, so that the count of the record's active
-- leases never exceeds the limit either. A grant that takes the
-- idempotency or dedupe key of a lapsed lease displaces that lease the
-- same way (invariant 4: it would otherwise revive beside the new one).
local ARGS_PER, OUT_PER = 12, 12
local conf, refused = open_conf()
if not conf then
  return refused
end
if conf.policy ~= '' then
  return {'POLICY'}
end
local now = now_us()
local bad = usable(conf, now)
if bad then
  return {bad}
end
local limit = conf.seats + conf.overdraft
-- Every acquisition of the run is judged at the same time (now), so only
-- the grants below change the count of live leases and the earliest
-- deadline: both are read once and then kept up to date (each acquisition
-- sees the values it would have seen had it run alone, after the ones
-- before it).
local n = live_count(now)
local total = redis.call('ZCARD', K_DL)
local prev = first_deadline()
local nb, nret = nil, 0 -- borrowed leases live now, and returned early (borrowed_count), counted when a borrow needs it

-- added notes a deadline just set in the deadlines set.
local function added(dl)
  if prev < 0 or dl < prev then
    prev = dl
  end
end

local function live(lid)
  if not lid then
    return nil
  end
  local r = get_rec(K_LEASES, lid)
  if r and r[DL] > now then
    return r
  end
  return nil
end

-- acquire handles the acquisition whose arguments start at ARGV[b].
local function acquire(b)
  local id, tok, borrow = ARGV[b], ARGV[b + 1], tonumber(ARGV[b + 3])
  local borrowing = borrow > 0
  local idem = idem_key(ARGV[b + 2], borrowing)
  local dk = nil
  local fallback = ''
  for i = b + 4, b + ARGS_PER - 1, 2 do
    if ARGV[i] == conf.strategy then
      dk = ARGV[i + 1]
    end
    if ARGV[i] == 'fingerprint' then
      fallback = ARGV[i + 1]
    end
  end
  if dk == nil then
    dk = fallback -- an unknown strategy behaves as the default
  end
  if borrowing then
    dk = ''
  end

  -- A borrow never hands back a normal lease, nor the reverse.
  local function mine(r)
    if r and (r[BOR] ~= nil) == borrowing then
      return r
    end
    return nil
  end
  -- keyed: the leases of this acquisition's keys found past their
  -- deadline, which a grant ends (below).
  local eid, rec, keyed = nil, nil, {}
  local function lapsed(lid)
    local r = lid and get_rec(K_LEASES, lid)
    if r and r[DL] <= now then
      keyed[#keyed + 1] = lid
    end
  end
  if idem ~= '' then
    eid = redis.call('HGET', K_IDEM, idem)
    rec = mine(live(eid))
    if not rec then
      lapsed(eid)
    end
  end
  if not rec and dk ~= '' then
    eid = redis.call('HGET', K_DEDUPE, dk)
    rec = mine(live(eid))
    if not rec then
      lapsed(eid)
    end
  end
  if rec then
    local was = prev
    local earliest = rec[DL] <= prev -- its old deadline may have been the earliest
    rec[TOK] = tok
    rec[HB] = now
    if not rec[BOR] then
      rec[DL] = now + conf.ttl -- a borrowed lease keeps its deadline
    end
    rec[SEQ] = rec[SEQ] + 1
    local reclaimed = rec[LINGER] and 1 or 0
    rec[LINGER] = nil -- a lingering lease, taken back by its client
    put_rec(K_LEASES, eid, rec)
    redis.call('ZADD', K_DL, fmt(rec[DL]), eid)
    if earliest then
      prev = first_deadline()
    else
      added(rec[DL])
    end
    if rec[DL] <= now then
      n = n - 1 -- was live, is no longer (a zero TTL)
    end
    return {'EXISTING', eid, rec[ACQ], rec[HB], rec[DL], rec[SEQ], n, was, rec[DEDUPE], limit, {}, reclaimed}
  end

  if borrowing then
    if conf.maxborrow <= 0 then
      return {'NOBORROW', '', now, 0, 0, 0, 0, prev, '', 0, {}}
    end
    if borrow > conf.maxborrow then
      return {'BORROWLONG', '', now, 0, 0, 0, 0, prev, '', 0, {}}
    end
    -- A borrowed certificate must not outlive the license.
    if conf.exp > 0 and now + borrow > conf.exp then
      return {'BORROWEXP', '', now, 0, 0, 0, 0, prev, '', 0, {}}
    end
    if not nb then
      nb, nret = borrowed_count(now)
    end
    -- server.License.CheckBorrow: a borrow returned early counts against
    -- the cap (max borrowed seats, else the seat limit) until its deadline.
    if conf.maxborrowed > 0 and nb + nret >= conf.maxborrowed then
      return {'BORROWLIMIT', '', now, 0, 0, 0, nb + nret, prev, '', conf.maxborrowed, {}}
    end
    if conf.maxborrowed == 0 and nret > 0 and nb + nret >= limit then
      return {'BORROWLIMIT', '', now, 0, 0, 0, nb + nret, prev, '', limit, {}}
    end
  end
  if n >= limit then
    return {'EXHAUSTED', '', 0, 0, 0, 0, n, prev, '', limit, {}}
  end
  if redis.call('HEXISTS', K_LEASES, id) == 1 or redis.call('HEXISTS', K_EXP, id) == 1 then
    return {'DUP', '', 0, 0, 0, 0, 0, prev, '', limit, {}}
  end
  -- Take the seats of the earliest lapsed leases this grant needs. The
  -- leases already waiting in the expiring hash are named too: they no
  -- longer count here, but their expiry may not be recorded yet (a cleaner
  -- died between its two steps), and the record must never hold more
  -- active leases than seats once this grant is recorded.
  local displaced = redis.call('HKEYS', K_EXP)
  -- The lapsed leases of this acquisition's idempotency or dedupe key end
  -- with the grant, which takes their keys: within its revival window such
  -- a lease could otherwise come back beside the new one, one client on
  -- two seats (invariant 4). They are displaced like the leases below.
  for _, lid in ipairs(keyed) do
    local raw = redis.call('HGET', K_LEASES, lid)
    if raw then
      unlink(lid, unpack_rec(raw))
      redis.call('HSET', K_EXP, lid, raw)
      displaced[#displaced + 1] = lid
      total = total - 1
    end
  end
  if #keyed > 0 then
    prev = first_deadline()
  end
  if total >= limit then
    for _, lid in ipairs(redis.call('ZRANGE', K_DL, 0, total - limit)) do
      local raw = redis.call('HGET', K_LEASES, lid)
      if raw then
        unlink(lid, unpack_rec(raw))
        redis.call('HSET', K_EXP, lid, raw)
        displaced[#displaced + 1] = lid
      else
        redis.call('ZREM', K_DL, lid)
      end
      total = total - 1
    end
    prev = first_deadline()
  end
  rec = {tok, now, now, now + conf.ttl, dk, idem, 0}
  if borrowing then
    rec[DL], rec[BOR] = now + borrow, 1
    redis.call('ZADD', K_BOR, fmt(rec[DL]), id)
    if nb then
      nb = nb + 1
    end
  end
  put_rec(K_LEASES, id, rec)
  redis.call('ZADD', K_DL, fmt(rec[DL]), id)
  if dk ~= '' then
    redis.call('HSET', K_DEDUPE, dk, id)
  end
  if idem ~= '' then
    redis.call('HSET', K_IDEM, idem, id)
  end
  local was = prev
  added(rec[DL])
  total = total + 1
  if rec[DL] > now then
    n = n + 1
  end
  return {'NEW', id, now, now, rec[DL], 0, n, was, dk, limit, displaced}
end

-- replayed answers a replay of an acquisition that was granted already.
-- The leases that grant displaced are all in the expiring hash now (unless
-- recorded since): it names every lease waiting there, as a grant does.
local function replayed(b)
  local r = get_rec(K_LEASES, ARGV[b])
  if r and r[TOK] == ARGV[b + 1] and r[SEQ] == 0 then
    local waiting = redis.call('HKEYS', K_EXP)
    return {'NEW', ARGV[b], r[ACQ], r[HB], r[DL], 0, n, prev, r[DEDUPE], limit, waiting}
  end
  return nil
end

local out = {'OK', conf.json, conf.epoch, conf.version}
for b = 1, #ARGV, ARGS_PER do
  -- Each acquisition's reads come before its writes, so one that fails
  -- (pcall) has written nothing and the others keep their answers.
  local ok, r = pcall(function()
    return replayed(b) or acquire(b)
  end)
  if not ok then
    r = {'ERR', tostring(type(r) == 'table' and r.err or r), 0, 0, 0, 0, 0, 0, '', 0, {}}
  end
  for i = 1, OUT_PER do
    local v = r[i]
    if v == nil then
      v = 0 -- (reclaimed, left out by all but EXISTING)
    end
    out[#out + 1] = v
  end
end
return out
