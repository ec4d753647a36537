-- heartbeat.lua renews leases that are still in the live state: update
-- only, never creates one. Strict expiry (invariant 3): a lease at or past
-- its deadline is renewed only within the revival window and only if a
-- seat is free. It takes several leases of the license at once (the
-- heartbeats that arrived together, see ../batch.go); each is judged on its
-- own, in order, exactly as if it came alone.
-- ARGV: 1 lease id, 2 token hash, [3 lease id, 4 token hash, ...].
-- Returns {'NOCONF'} | {'DELETED'} for all of them, else
--   {'OK', first deadline before any renewal (-1 if none), now, ttl,
--    then for each lease one status code}
-- with codes 0 renewed (last heartbeat now, deadline now + ttl), 1 no such
-- lease, 2 wrong token, 3 expired, 4 license inactive, 5 license expired,
-- 6 borrowed (a borrowed lease keeps the deadline it was borrowed until),
-- 7 to be judged: a lapsed lease within the revival window of a license
-- with a site policy, whose settings hold the window negated (revival <
-- 0): revive.lua revives it only if the policy allows; 8 released: a
-- lingering lease (common.lua), released by its client, which changes
-- nothing and is never revived.
-- (Small integers: cheap to build here and to read in Go.)
local RENEWED, NOLEASE, TOKEN, EXPIRED, BORROWED, JUDGED, RELEASED = 0, 1, 2, 3, 6, 7, 8
local UNUSABLE = {INACTIVE = 4, LICEXPIRED = 5}
local conf, refused = open_conf(HOT_FIELDS)
if not conf then
  return refused
end
local now = now_us()
local bad = usable(conf, now)
if bad then
  bad = UNUSABLE[bad]
end
local out = {'OK', first_deadline(), now, conf.ttl}

-- Renewals are written once at the end, in one HSET and one ZADD for the
-- whole run (each redis.call costs more than the work it does here). Until
-- then `renewed` holds them, so that a lease heartbeated twice in one run
-- sees its first renewal, and `flush` writes them before anything that
-- reads the deadlines from Redis (live_count on the revival path).
local renewed, order = {}, {}

local function flush()
  if #order == 0 then
    return
  end
  local recs, dls = {}, {}
  for _, id in ipairs(order) do
    local r = renewed[id]
    recs[#recs + 1] = id
    recs[#recs + 1] = pack_rec(r)
    dls[#dls + 1] = fmt(r[DL])
    dls[#dls + 1] = id
  end
  redis.call('HSET', K_LEASES, unpack(recs))
  redis.call('ZADD', K_DL, unpack(dls))
  renewed, order = {}, {}
end

local function renew(id, tok)
  local r = renewed[id] or get_rec(K_LEASES, id)
  if not r then
    local x = get_rec(K_EXP, id)
    if not x then
      return NOLEASE
    end
    if x[TOK] ~= tok then
      return TOKEN
    end
    if x[LINGER] then
      return RELEASED -- its linger lapsed: being recorded as released
    end
    return EXPIRED -- being recorded as expired: never revived
  end
  if r[TOK] ~= tok then
    return TOKEN
  end
  if r[LINGER] then
    return RELEASED
  end
  if r[BOR] then
    if r[DL] <= now then
      return EXPIRED
    end
    return BORROWED
  end
  if r[DL] <= now then
    local window = math.abs(conf.revival)
    if window <= 0 or now >= r[DL] + window then
      return EXPIRED
    end
    if conf.revival < 0 then
      return JUDGED -- a license with a site policy: revive.lua judges it
    end
    flush()
    if live_count(now) >= conf.seats + conf.overdraft then
      return EXPIRED
    end
  end
  if bad then
    return bad
  end
  r[HB] = now
  r[DL] = now + conf.ttl
  if not renewed[id] then
    renewed[id] = r
    order[#order + 1] = id
  end
  return RENEWED
end

for i = 1, #ARGV, 2 do
  out[#out + 1] = renew(ARGV[i], ARGV[i + 1])
end
flush()
return out
