-- acquire.lua grants a seat, or hands back the live lease of the same
-- idempotency key or dedupe key, in one atomic step (invariants 1, 2, 4).
-- It takes several acquisitions on the license at once (the ones that
-- arrived together, see batch.go) and judges each on its own, in order,
-- exactly as if it came alone: each counts the seats the ones before it
-- took.
-- ARGV: per acquisition, 11 values: lease id, token hash, idempotency key
--       ('' = none), then 4 pairs of (leasing strategy, dedupe key)
--       computed by the caller for every strategy; the license's current
--       strategy picks one.
-- Returns one of, for all of them:
--   {'NOCONF'} | {'DELETED'} | {'INACTIVE'} | {'LICEXPIRED'}
-- else {'OK', license json, epoch, then for each acquisition 10 values:
--   status, lease id, acquired, last_hb, deadline, token_seq, seats in
--   use, previous first deadline, dedupe key, limit}
-- with status 'NEW' | 'EXISTING' (all values set), 'EXHAUSTED' (seats in
-- use and limit set) or 'DUP'; unset values are 0 or ''.
local ARGS_PER = 11
local conf = load_conf()
if not conf then
  return {'NOCONF'}
end
if conf.deleted then
  return {'DELETED'}
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
local prev = first_deadline()

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
  local id, tok, idem = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local dk = nil
  local fallback = ''
  for i = b + 3, b + ARGS_PER - 1, 2 do
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

  local eid, rec = nil, nil
  if idem ~= '' then
    eid = redis.call('HGET', K_IDEM, idem)
    rec = live(eid)
  end
  if not rec and dk ~= '' then
    eid = redis.call('HGET', K_DEDUPE, dk)
    rec = live(eid)
  end
  if rec then
    local was = prev
    local earliest = rec[DL] <= prev -- its old deadline may have been the earliest
    rec[TOK] = tok
    rec[HB] = now
    rec[DL] = now + conf.ttl
    rec[SEQ] = rec[SEQ] + 1
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
    return {'EXISTING', eid, rec[ACQ], rec[HB], rec[DL], rec[SEQ], n, was, rec[DEDUPE], limit}
  end

  if n >= limit then
    return {'EXHAUSTED', '', 0, 0, 0, 0, n, prev, '', limit}
  end
  if redis.call('HEXISTS', K_LEASES, id) == 1 or redis.call('HEXISTS', K_EXP, id) == 1 then
    return {'DUP', '', 0, 0, 0, 0, 0, prev, '', limit}
  end
  rec = {tok, now, now, now + conf.ttl, dk, idem, 0}
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
  if rec[DL] > now then
    n = n + 1
  end
  return {'NEW', id, now, now, rec[DL], 0, n, was, dk, limit}
end

local out = {'OK', conf.json, conf.epoch}
for b = 1, #ARGV, ARGS_PER do
  local r = acquire(b)
  for i = 1, 10 do
    out[#out + 1] = r[i]
  end
end
return out
