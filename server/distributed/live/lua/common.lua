-- common.lua is prepended to every script (see scripts.go).
--
-- Every script works on the keys of ONE license, hash-tagged by its id so
-- that they share a slot (layout 2, ../keys.go):
--   KEYS[1] conf      hash: the license's settings (see setconf.lua)
--   KEYS[2] leases    hash: lease id -> packed lease record
--   KEYS[3] deadlines zset: lease id -> deadline (unix microseconds)
--   KEYS[4] dedupe    hash: dedupe key -> lease id
--   KEYS[5] idem      hash: idempotency key -> lease id
--   KEYS[6] expiring  hash: lease id -> packed record, for leases taken out
--                     of the live state (expire.lua, or a grant that took
--                     their seat) whose expiry is not yet recorded in
--                     PostgreSQL
--   KEYS[7] ended     zset: lease id -> when end.lua removed it, kept
--                     ENDED_KEEP: a rebuild whose snapshot of the record
--                     was read before that end never brings it back
--   KEYS[8] borrowed  zset: lease id -> deadline, of the borrowed leases;
--                     a borrowed lease that ended before its deadline
--                     (returned early: end.lua) stays in it until then,
--                     counted against the borrow cap (borrowed_count)
-- Lease ids are binary (12 bytes for a canonical id, ../ids.go), and so is
-- a lease's token hash (the first 16 bytes of its SHA-256): the scripts
-- only compare them.
-- A lease record is cmsgpack({token hash, acquired, deadline - last
-- heartbeat, deadline, dedupe_key, idempotency_key, token_seq, borrowed,
-- lingering}) (borrowed: 1, or absent; lingering: 1, or absent: released
-- by its client and held for its linger until its deadline, its last
-- heartbeat the release, server/linger.go; never both, and a lingering
-- record leaves the borrowed slot a hole, which cmsgpack packs as a map
-- of the same keys): unpack_rec and pack_rec turn the third into
-- the last heartbeat and back, so that scripts see {.., last_heartbeat,
-- ..} (a difference of two times packs in 5 bytes, a time in 9). Times
-- are unix microseconds (exact in a double up to 2^53, i.e. well past year
-- 2200). A borrowed lease has no dedupe key and its idempotency key is
-- kept apart (idem_key), so that only a retried borrow finds it.
-- Time is Redis TIME: the store's one clock.
local K_CONF, K_LEASES, K_DL, K_DEDUPE, K_IDEM, K_EXP, K_ENDED = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local K_BOR = KEYS[8]

-- POOL_KEYS is how many keys of a pool a script that judges several pools
-- of one license takes (acquire_pools.lua): pool i's are KEYS[(i-1)*8+1 ..
-- i*8], in the order above. use_pool points the K_* names (and every
-- function below that uses them) at pool i's keys.
local POOL_KEYS = 8
local function use_pool(i)
  local b = (i - 1) * POOL_KEYS
  K_CONF, K_LEASES, K_DL, K_DEDUPE = KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4]
  K_IDEM, K_EXP, K_ENDED, K_BOR = KEYS[b + 5], KEYS[b + 6], KEYS[b + 7], KEYS[b + 8]
end

-- ENDED_KEEP (µs) is how long K_ENDED remembers an end. rebuild.lua refuses
-- a snapshot older than REBUILD_MAX_AGE, which must stay well below it.
-- A license of 500,000 leases takes more than 5 s from snapshot to write
-- (make bench/scale): with a 5 s limit it stayed unavailable for 40 s
-- after a Redis loss, every rebuild refused as too old.
local ENDED_KEEP, REBUILD_MAX_AGE = 60000000, 30000000

local TOK, ACQ, HB, DL, DEDUPE, IDEM, SEQ, BOR, LINGER = 1, 2, 3, 4, 5, 6, 7, 8, 9

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- fmt prints an integral number without exponent or fraction.
local function fmt(n)
  return string.format('%d', n)
end

-- unpack_rec and pack_rec turn a stored record into the one scripts use
-- and back (the last heartbeat is stored as its distance to the deadline).
local function unpack_rec(raw)
  local r = cmsgpack.unpack(raw)
  r[HB] = r[DL] - r[HB]
  return r
end

local function pack_rec(r)
  local hb = r[HB]
  r[HB] = r[DL] - hb
  local raw = cmsgpack.pack(r)
  r[HB] = hb
  return raw
end

local function get_rec(key, id)
  local raw = redis.call('HGET', key, id)
  if not raw then
    return nil
  end
  return unpack_rec(raw)
end

local function put_rec(key, id, r)
  redis.call('HSET', key, id, pack_rec(r))
end

-- CONF_FIELDS are the fields of the settings hash; a heartbeat reads only
-- the first HOT_FIELDS of them (the license JSON, the largest field, would
-- otherwise be read on every run).
local CONF_FIELDS = {'epoch', 'deleted', 'seats', 'overdraft', 'ttl', 'revival', 'active', 'exp',
  'strategy', 'tenant', 'version', 'maxborrow', 'maxborrowed', 'starts', 'policy', 'linger', 'json'}
local HOT_FIELDS = 8
-- ALL_BUT_JSON reads every field but the license JSON, last of them: what
-- a feature's acquisition judges its pools by (acquire_pools.lua).
local ALL_BUT_JSON = #CONF_FIELDS - 1

-- load_conf returns the license settings (the first n fields, all when n
-- is nil), or nil when the live state of the license is absent (never
-- built, or Redis lost it).
local function load_conf(n)
  local v = redis.call('HMGET', K_CONF, unpack(CONF_FIELDS, 1, n or #CONF_FIELDS))
  if not v[1] then
    return nil
  end
  return {
    epoch = tonumber(v[1]),
    deleted = v[2] == '1',
    seats = tonumber(v[3] or '0'),
    overdraft = tonumber(v[4] or '0'),
    ttl = tonumber(v[5] or '0'),
    revival = tonumber(v[6] or '0'),
    active = v[7] == '1',
    exp = tonumber(v[8] or '0'),
    strategy = v[9] or '',
    tenant = v[10] or '',
    version = v[11] or '0',
    maxborrow = tonumber(v[12] or '0'),
    maxborrowed = tonumber(v[13] or '0'),
    starts = tonumber(v[14] or '0'), -- a grant's pool: not before (µs; 0: at once)
    policy = v[15] or '', -- the generation of the license's site policy ('' none: setconf.lua)
    linger = tonumber(v[16] or '0'), -- how long a released seat of the pool lingers (µs; 0: none)
    json = v[17] or '',
  }
end

-- open_conf is load_conf for a call on the license's leases: the settings,
-- or nil and the reply shared by every call when the license has no live
-- state ({'NOCONF'}) or is deleted ({'DELETED'}).
local function open_conf(n)
  local conf = load_conf(n)
  if not conf then
    return nil, {'NOCONF'}
  end
  if conf.deleted then
    return nil, {'DELETED'}
  end
  return conf
end

-- usable is nil when the license may grant and keep seats at now, else the
-- status naming why not (server.License.CheckUsable). A heartbeat reads
-- only the HOT_FIELDS: a grant's start is judged by acquisitions alone
-- (no lease of a pool exists before its start).
local function usable(conf, now)
  if not conf.active then
    return 'INACTIVE'
  end
  if conf.exp > 0 and now >= conf.exp then
    return 'LICEXPIRED'
  end
  if conf.starts and conf.starts > 0 and now < conf.starts then
    return 'NOTSTARTED'
  end
  return nil
end

-- live_count counts the leases whose deadline is after now (invariant 2).
local function live_count(now)
  return redis.call('ZCOUNT', K_DL, '(' .. fmt(now), '+inf')
end

-- first_deadline is the earliest deadline of the live leases, -1 if none.
local function first_deadline()
  local m = redis.call('ZRANGE', K_DL, 0, 0, 'WITHSCORES')
  if m[2] then
    return tonumber(m[2])
  end
  return -1
end

-- min_deadline is the earliest deadline of every lease the cleaner may
-- still have to see (live or expiring), -1 if none.
local function min_deadline()
  local best = first_deadline()
  local vals = redis.call('HVALS', K_EXP)
  for _, raw in ipairs(vals) do
    local r = unpack_rec(raw)
    if best < 0 or r[DL] < best then
      best = r[DL]
    end
  end
  return best
end

-- idem_key is the idempotency hash's key of a lease: a borrowed lease's
-- is kept apart, so that a retried acquisition never finds a borrowed
-- lease (nor a retried borrow a normal one). Its prefix is the byte 0xFF,
-- which no client's key can hold: proto3 strings are valid UTF-8, and
-- UTF-8 never uses that byte.
local function idem_key(idem, borrowed)
  if borrowed and idem ~= '' then
    return '\255' .. idem
  end
  return idem
end

-- borrowed_count counts the borrowed leases live at now, and those
-- returned early whose deadline is after now (their certificates may
-- still be used offline): live, returned. It forgets the entries past
-- their deadline.
local function borrowed_count(now)
  redis.call('ZREMRANGEBYSCORE', K_BOR, '-inf', fmt(now))
  local n, ret = 0, 0
  for _, lid in ipairs(redis.call('ZRANGEBYSCORE', K_BOR, '(' .. fmt(now), '+inf')) do
    if redis.call('HEXISTS', K_LEASES, lid) == 1 then
      n = n + 1
    else
      ret = ret + 1
    end
  end
  return n, ret
end

-- unlink_from takes a lease out of a set of lease keys (k: leases,
-- deadlines, dedupe, idem, borrowed: the live ones, or a rebuild's
-- staging), with the dedupe and idempotency entries that still point at
-- it.
local function unlink_from(k, id, r)
  redis.call('HDEL', k[1], id)
  redis.call('ZREM', k[2], id)
  if r[BOR] then
    redis.call('ZREM', k[5], id)
  end
  if r[DEDUPE] ~= '' and redis.call('HGET', k[3], r[DEDUPE]) == id then
    redis.call('HDEL', k[3], r[DEDUPE])
  end
  if r[IDEM] ~= '' and redis.call('HGET', k[4], r[IDEM]) == id then
    redis.call('HDEL', k[4], r[IDEM])
  end
end

-- unlink takes a lease out of the live state.
local function unlink(id, r)
  unlink_from({K_LEASES, K_DL, K_DEDUPE, K_IDEM, K_BOR}, id, r)
end
