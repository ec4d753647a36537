-- revive.lua is heartbeat.lua's revival of a lapsed lease, for a license
-- with a site policy: heartbeat.lua leaves such a revival to it (its pool's
-- settings say revival < 0: the window, negated), and it revives the
-- lease only if, besides the window and a free seat of its pool, the
-- policy would grant its client a seat now (server.Judge, as
-- acquire_pools.lua judges an acquisition, over the pools that may grant
-- the lease's feature and version), with the reservation it may take
-- being only its own (Lease.Reservation is set once, at the grant): a
-- revival never breaks a cap or a reservation. A lease found live (revived
-- meanwhile) is renewed as heartbeat.lua would.
-- KEYS: as acquire_pools.lua's: the 8 keys of each pool of the scope (the
--       ones that may grant first), the license's settings, the policy
--       index and its marker.
-- ARGV: 1 the license's settings version the decision was made at, 2 the
--       number of pools that may grant, 3 of pools of the scope, 4 the
--       place of the lease's pool among them, 5 lease id, 6 token hash, 7
--       the decision (acquire_pools.lua; '' none: the license has no
--       policy).
-- Returns {'NOCONF', i...} | {'DELETED', i} | {'STALE', version in Redis} |
--   {'NOPOLICYINDEX', generation} (acquire_pools.lua), else {'OK', code,
--   now, ttl, first deadline of the lease's pool before (-1 if none)}, code
--   as heartbeat.lua's (a lease that began to linger meanwhile: released).
local RENEWED, NOLEASE, TOKEN, EXPIRED, BORROWED, RELEASED = 0, 1, 2, 3, 6, 8
local UNUSABLE = {INACTIVE = 4, LICEXPIRED = 5, NOTSTARTED = 3}
local npools, nscope, at = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local LIC_CONF = KEYS[nscope * POOL_KEYS + 1]
local K_IDX, K_MARK = KEYS[nscope * POOL_KEYS + 2], KEYS[nscope * POOL_KEYS + 3]
local id, tok = ARGV[5], ARGV[6]

local lic = redis.call('HMGET', LIC_CONF, 'epoch', 'deleted', 'version', 'policy')
local missing = {}
if not lic[1] then
  missing[1] = 0
elseif lic[2] == '1' then
  return {'DELETED', 0}
elseif (lic[3] or '0') ~= ARGV[1] then
  return {'STALE', lic[3] or '0'}
end
local policy_gen = lic[4] or ''
local confs = {}
for i = 1, nscope do
  use_pool(i)
  local c = load_conf(ALL_BUT_JSON)
  if not c then
    missing[#missing + 1] = i
  elseif c.deleted then
    return {'DELETED', i}
  end
  confs[i] = c
end
if #missing > 0 then
  return {'NOCONF', unpack(missing)}
end
if policy_gen ~= '' and redis.call('GET', K_MARK) ~= policy_gen then
  return {'NOPOLICYINDEX', policy_gen}
end

local now = now_us()
local conf = confs[at]
use_pool(at)
local first = first_deadline()
local function answer(code)
  return {'OK', code, now, conf.ttl, first}
end

local r = get_rec(K_LEASES, id)
if not r then
  local x = get_rec(K_EXP, id)
  if not x then
    return answer(NOLEASE)
  end
  if x[TOK] ~= tok then
    return answer(TOKEN)
  end
  if x[LINGER] then
    return answer(RELEASED)
  end
  return answer(EXPIRED) -- being recorded as expired: never revived
end
if r[TOK] ~= tok then
  return answer(TOKEN)
end
if r[LINGER] then
  return answer(RELEASED)
end
if r[BOR] then
  if r[DL] <= now then
    return answer(EXPIRED)
  end
  return answer(BORROWED)
end
if r[DL] <= now then
  local window = math.abs(conf.revival)
  if window <= 0 or now >= r[DL] + window then
    return answer(EXPIRED)
  end
  if live_count(now) >= conf.seats + conf.overdraft then
    return answer(EXPIRED)
  end
  if ARGV[7] ~= '' then
    local P = cjson.decode(ARGV[7])
    policy_use(K_IDX, now, P[5])
    local n, limit, any = 0, 0, false
    for i = 1, npools do
      if usable(confs[i], now) == nil then
        any = true
        use_pool(i)
        local l = confs[i].seats + confs[i].overdraft
        n, limit = n + math.min(live_count(now), l), limit + l
      end
    end
    use_pool(at)
    if any and (n >= limit or judge(P, n, limit) == nil) then
      return answer(EXPIRED)
    end
  end
end
local bad = usable(conf, now)
if bad then
  return answer(UNUSABLE[bad])
end
r[HB] = now
r[DL] = now + conf.ttl
put_rec(K_LEASES, id, r)
redis.call('ZADD', K_DL, fmt(r[DL]), id)
return answer(RENEWED)
