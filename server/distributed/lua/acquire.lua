-- acquire.lua grants a seat, or hands back the live lease of the same
-- idempotency key or dedupe key, in one atomic step (invariants 1, 2, 4).
-- ARGV: 1 lease id, 2 token hash, 3 idempotency key ('' = none),
--       4.. pairs of (leasing strategy, dedupe key) computed by the caller
--       for every strategy; the license's current strategy picks one.
-- Returns one of:
--   {'NOCONF'} | {'DELETED'} | {'INACTIVE'} | {'LICEXPIRED'}
--   {'EXHAUSTED', in_use, limit} | {'DUP'}
--   {'NEW' | 'EXISTING', lease id, acquired, last_hb, deadline, token_seq,
--    seats_in_use, license json, epoch, previous first deadline, dedupe key}
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

local id, tok, idem = ARGV[1], ARGV[2], ARGV[3]
local dk = nil
local fallback = ''
for i = 4, #ARGV, 2 do
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

local prev = first_deadline()
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
  rec[TOK] = tok
  rec[HB] = now
  rec[DL] = now + conf.ttl
  rec[SEQ] = rec[SEQ] + 1
  put_rec(K_LEASES, eid, rec)
  redis.call('ZADD', K_DL, fmt(rec[DL]), eid)
  return {'EXISTING', eid, rec[ACQ], rec[HB], rec[DL], rec[SEQ], live_count(now), conf.json,
    conf.epoch, prev, rec[DEDUPE]}
end

local n = live_count(now)
local limit = conf.seats + conf.overdraft
if n >= limit then
  return {'EXHAUSTED', n, limit}
end
if redis.call('HEXISTS', K_LEASES, id) == 1 or redis.call('HEXISTS', K_EXP, id) == 1 then
  return {'DUP'}
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
return {'NEW', id, now, now, rec[DL], 0, n + 1, conf.json, conf.epoch, prev, dk}
