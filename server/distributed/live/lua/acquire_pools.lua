-- acquire_pools.lua is acquire.lua for a feature: an acquisition judged
-- over the pools of the grants that may grant it (server.License.GrantsFor,
-- in pick order), all of one license and so of one slot (../keys.go), in
-- one atomic step (invariant 12). Like acquire.lua it takes the
-- acquisitions on the same pools that arrived together (../batch.go) and
-- judges each on its own, in order, as if it came alone:
--   1. a live lease of the acquisition's idempotency key, else of its
--      dedupe key, in any usable pool is handed back (new token) (with
--      a policy of the scope, only to its own user and host: for another
--      the lease's seat counts free, and a grant replaces the lease,
--      policy.lua hands_back);
--      a replay of the script (same lease id and token) answers its grant;
--   2. else the first usable pool with a free seat grants, exactly as
--      acquire.lua does in one license: lapsed leases whose seat it needs
--      are displaced, and so are the lapsed leases of the acquisition's
--      keys in ANY of the pools (they could otherwise revive beside the new
--      one); a borrow is judged by the pool's own limits and expiry (a
--      pool that refuses it is passed over like a full one);
--   3. else EXHAUSTED with the seats in use and the limits summed over the
--      usable pools (or, if every usable pool refused the borrow, the first
--      refusal), or UNUSABLE when no pool is usable now.
-- A license with a site policy (its settings' 'policy': the generation of
-- its policy) is acquired only here, its base pool too (as the one pool
-- of its scope: acquire.lua answers POLICY). Each acquisition then brings
-- the policy's decision (../policy.go Judgement), judged between steps 2
-- and 3 exactly as server.Judge judges it, with n and the limit summed
-- over the usable pools it may take (each pool's count at most its
-- limit), and, from the policy index (KEYS: index, marker), the live
-- leases of the scope under each cap's identities and each reservation:
--   index members are  scope \0 'i' \0 user \0 host \0 pool \0 lease
--                      (every lease's, empty user or host too),
--                      scope \0 'u' \0 user \0 pool \0 lease,
--                      scope \0 'h' \0 host \0 pool \0 lease (lower case),
--                      scope \0 'r' \0 reservation key \0 pool \0 lease
--   (score 0, read by lexicographic range; scope: '' the base pool, else
--   the feature; pool: '' the license's, else its grant's id after the
--   dot; lease: its key, ../ids.go). A member counts when its lease is in
--   its pool's deadlines with a deadline after now; one whose lease is not
--   there (ended, expiring, its grant gone) is removed as it is met. Every
--   pool of the scope is passed (KEYS), the ones that may grant (in pick
--   order) first. A grant adds its lease's members; nothing is granted
--   unless the marker holds the settings' generation (the index was built
--   for it: else NOPOLICYINDEX, and the caller builds it from the record:
--   policy_index.lua).
-- KEYS: the 8 keys of each pool of the scope (common.lua, use_pool), the
--       ones that may grant first, then the license's own settings hash,
--       then the policy index and its marker (../keys.go Policy).
-- ARGV: per acquisition 16 values: the license's settings version the
--       caller's grants were read at, the number of pools that may grant
--       and of pools of the scope (the same for every acquisition of a
--       run), lease id, token hash, idempotency key, borrow (µs), 4 pairs
--       of (strategy, dedupe key) as acquire.lua, then the policy's
--       decision ('' none: the license has no policy), JSON:
--       [scope, user, host (lower case), refused (0/1), [pool of each
--       KEYS pool: '' or the grant's id after the dot], [[tag 'u'|'h',
--       limit, [names] (a group's: its JSON as a string, or 0 when the
--       caller left its members out: policy.lua count_names)] per cap],
--       [[key, seats, member (0/1)] per
--       reservation], the policy has rules of the scope (0/1): a lease
--       is handed back only to its own user and host].
-- Returns, for all of them, {{'NOCONF', i...}} (pools without live state;
-- 0: the license), {{'DELETED', i}} (0: the license), {{'STALE', version
-- in Redis}} (the grants changed), {{'NOPOLICYINDEX', generation}}; else {'OK',
-- {each pool's json, or '' when no acquisition of the run was judged in
-- it}, {epoch}, {settings version}, {usable() status or ''}, {start
-- (µs)} (of the pools that may grant, up to the last one an acquisition
-- of the run looked at; all four '' for a pool none looked at: see
-- conf_of), then per acquisition 14 values:
-- status, i, lease id, acquired, last_hb, deadline, token_seq, in use,
-- previous first deadline of pool i, dedupe key, limit, displaced {pool,
-- id, pool, id ...}, policy, replaced {pool, id, last_hb, deadline} (the
-- live lease a grant took the place of, now expiring, or {})}, status as acquire.lua's, or 'UNUSABLE', or
-- 'POLICYREFUSED', or 'NEEDNAMES' (the decision left out the members
-- of a group whose count needs them: nothing written, ask again with
-- them); i is the pool judged (0: none). A borrow refusal gives
-- the time it was judged at in place of acquired (acquire.lua). policy is
-- for a grant the index (from 1) of the reservation whose seat it took (0
-- a shared seat), for POLICYREFUSED {cap counts, reservation counts} of
-- the caps and reservations judged (in use and limit: n and the limit),
-- for EXISTING 1 if the lease handed back was lingering (taken back by its
-- client, server/linger.go), else 0.
local ARGS_PER, OUT_PER = 16, 14
local npools, nscope = tonumber(ARGV[2]), tonumber(ARGV[3])
local LIC_CONF = KEYS[nscope * POOL_KEYS + 1]
local K_IDX, K_MARK = KEYS[nscope * POOL_KEYS + 2], KEYS[nscope * POOL_KEYS + 3]

-- Every pool of the scope is checked at once (it has live state, it is
-- not deleted, its leasing strategy: one HMGET of 3 fields a pool); the
-- rest of a pool's settings, and whether it is usable, only when an
-- acquisition looks at the pool (conf_of): as far down the pick order as
-- the pick goes, and the pools of a live lease of its keys. A pool not
-- looked at costs an acquisition its check and its key lookups alone
-- (none in a pool without keys: keys_in).
-- The license's own settings hash is read once: in full when the license
-- is the pool (a license with a site policy: its base pool).
local confs, strategies, keys_in = {}, {}, {} -- a pool's settings (once looked at); its strategy; below
local lic
if KEYS[1] == LIC_CONF then
  use_pool(1)
  local c = load_conf(ALL_BUT_JSON)
  confs[1] = c
  lic = c and {c.epoch, c.deleted and '1' or '0', c.version, c.policy} or {}
else
  lic = redis.call('HMGET', LIC_CONF, 'epoch', 'deleted', 'version', 'policy')
end
local missing = {}
if not lic[1] then
  missing[1] = 0
elseif lic[2] == '1' then
  return {{'DELETED', 0}}
elseif (lic[3] or '0') ~= ARGV[1] then
  return {{'STALE', lic[3] or '0'}}
end
local policy_gen = lic[4] or ''

for i = 1, nscope do
  use_pool(i)
  local exists, deleted
  if K_CONF == LIC_CONF then
    local c = i == 1 and confs[1] or load_conf(ALL_BUT_JSON)
    confs[i] = c
    exists, deleted, strategies[i] = c ~= nil, c and c.deleted, c and c.strategy
  else
    local v = redis.call('HMGET', K_CONF, 'epoch', 'deleted', 'strategy')
    exists, deleted, strategies[i] = v[1] ~= nil and v[1] ~= false, v[2] == '1', v[3] or ''
  end
  if not exists then
    missing[#missing + 1] = i
  elseif deleted then
    return {{'DELETED', i}}
  end
  -- keys_in: the pool's dedupe or idempotency hash holds a key (Redis
  -- drops an empty hash), or may since a grant of the run wrote one; the
  -- pools after the one that grants are often empty. (One pool: its
  -- lookups are as cheap as the check.)
  if i <= npools then
    keys_in[i] = npools == 1 or redis.call('EXISTS', K_DEDUPE, K_IDEM) > 0
  end
end
if #missing > 0 then
  return {{'NOCONF', unpack(missing)}}
end
if policy_gen ~= '' and redis.call('GET', K_MARK) ~= policy_gen then
  return {{'NOPOLICYINDEX', policy_gen}}
end

local now = now_us()
local bads = {}
-- conf_of is the settings of pool i (of those that may grant), loaded the
-- first time an acquisition of the run looks at the pool, with its
-- usable() status (bad); the current pool (use_pool) stays as it was.
local function conf_of(i)
  local c = confs[i]
  if not c or not bads[i] then
    if not c then
      local was = K_CONF
      K_CONF = KEYS[(i - 1) * POOL_KEYS + 1]
      c = load_conf(ALL_BUT_JSON)
      K_CONF = was
      confs[i] = c
    end
    bads[i] = usable(c, now) or ''
  end
  return c
end
local function bad(i)
  conf_of(i)
  return bads[i]
end

-- count_of is the number of live leases of pool i (the current pool):
-- counted once a run, then kept up to date by the grants (every
-- acquisition of the run is judged at the same time, now).
local counts = {}
local function count_of(i)
  if not counts[i] then
    counts[i] = live_count(now)
  end
  return counts[i]
end

-- acquire judges the acquisition whose arguments start at ARGV[b]. Its
-- reads come before its writes (but for the index members of ended leases
-- that its counts remove, which were due to go anyway), so one that fails
-- (pcall) has written nothing else.
local function acquire(b)
  local id, tok, borrow = ARGV[b], ARGV[b + 1], tonumber(ARGV[b + 3])
  local borrowing = borrow > 0
  local idem = idem_key(ARGV[b + 2], borrowing)
  local P -- the policy's decision, if the license has a policy
  if policy_gen ~= '' then
    if ARGV[b + 12] == '' then
      error('the license has a site policy: the acquisition must bring its decision')
    end
    P = cjson.decode(ARGV[b + 12])
    policy_use(K_IDX, now, P[5])
  end

  -- dedupe_of is the acquisition's dedupe key under a pool's strategy.
  local function dedupe_of(strategy)
    if borrowing then
      return ''
    end
    local dk, fallback = nil, ''
    for j = b + 4, b + 11, 2 do
      if ARGV[j] == strategy then
        dk = ARGV[j + 1]
      end
      if ARGV[j] == 'fingerprint' then
        fallback = ARGV[j + 1]
      end
    end
    return dk or fallback
  end

  local function reply(status, i, r, lid, n, prev, limit, displaced, pol, replaced)
    local acq, hb, dl, seq, dk = 0, 0, 0, 0, ''
    if r then
      acq, hb, dl, seq, dk = r[ACQ], r[HB], r[DL], r[SEQ], r[DEDUPE]
    end
    return {status, i, lid or '', acq, hb, dl, seq, n or 0, prev or -1, dk, limit or 0, displaced or {}, pol or 0, replaced or {}}
  end

  -- replay answers the grant this acquisition got in an earlier run of the
  -- script (the caller retried it: same lease id and token): lease r of
  -- pool i.
  local function replay(i, r)
    use_pool(i)
    local waiting = {}
    for _, lid in ipairs(redis.call('HKEYS', K_EXP)) do
      waiting[#waiting + 1] = i
      waiting[#waiting + 1] = lid
    end
    local k = 0
    if P then
      k = taken(P, i, id)
    end
    local conf = conf_of(i)
    return reply('NEW', i, r, id, count_of(i), first_deadline(), conf.seats + conf.overdraft, waiting, k)
  end
  local function is_replay(i, lid, r)
    return lid == id and r[TOK] == tok and r[SEQ] == 0 and bad(i) == ''
  end

  -- hand_back renews the live lease lid of pool i (acquire.lua's EXISTING).
  local function hand_back(i, lid, r)
    use_pool(i)
    local conf = conf_of(i)
    local was = first_deadline()
    r[TOK] = tok
    r[HB] = now
    if not r[BOR] then
      r[DL] = now + conf.ttl
    end
    r[SEQ] = r[SEQ] + 1
    local reclaimed = r[LINGER] and 1 or 0
    r[LINGER] = nil -- a lingering lease, taken back by its client
    put_rec(K_LEASES, lid, r)
    redis.call('ZADD', K_DL, fmt(r[DL]), lid)
    local n = count_of(i)
    if r[DL] <= now then
      n = n - 1 -- was live, is no longer (a zero TTL)
      counts[i] = n
    end
    return reply('EXISTING', i, r, lid, n, was, conf.seats + conf.overdraft, {}, reclaimed)
  end

  -- dks is the acquisition's dedupe key in each pool: a pool's strategy
  -- picks it (dedupe_of runs once a strategy, not once a pool: this
  -- judges every acquisition of a run, and a run's pools may be 50).
  local dks, by_strategy, any_key = {}, {}, idem ~= ''
  for i = 1, npools do
    local st = strategies[i]
    local dk = by_strategy[st]
    if not dk then
      dk = dedupe_of(st)
      by_strategy[st] = dk
      any_key = any_key or dk ~= ''
    end
    dks[i] = dk
  end

  -- 1. A replay of this script answers its own grant. A replayed
  -- acquisition's keys still name its lease (a lease owns its keys until
  -- it ends), so the lookups of step 2 find it; one without keys is looked
  -- for by its id in every pool.
  if not any_key then
    for i = 1, npools do
      use_pool(i)
      local r = get_rec(K_LEASES, id)
      if r and is_replay(i, id, r) then
        return replay(i, r)
      end
    end
  end

  -- 2. The live lease of the idempotency key, else of the dedupe key, in
  -- any usable pool (each pool's two keys read once: 2 calls a pool, the
  -- bulk of a feature's acquisition; none in a pool whose two hashes are
  -- empty, keys_in). keyed notes the lapsed leases of this acquisition's
  -- keys, pool, id, pool, id ...
  local keyed, noted = {}, {}
  local by_idem, by_dedupe -- {pool, id, record} of the first usable live lease of each key
  for i = 1, npools do
    if keys_in[i] then
      use_pool(i)
      for k = 1, 2 do
        local hash, key = K_IDEM, idem
        if k == 2 then
          hash, key = K_DEDUPE, dks[i]
        end
        local lid = key ~= '' and redis.call('HGET', hash, key)
        local r = lid and get_rec(K_LEASES, lid)
        if r then
          if is_replay(i, lid, r) then
            return replay(i, r)
          end
          if r[DL] <= now then
            if not noted[lid] then
              noted[lid] = true
              keyed[#keyed + 1] = i
              keyed[#keyed + 1] = lid
            end
          elseif (r[BOR] ~= nil) == borrowing and bad(i) == '' then
            if k == 1 and hands_back(P, i, lid, r) then
              return hand_back(i, lid, r)
            elseif k == 1 then
              by_idem = by_idem or {i, lid, r}
            else
              by_dedupe = by_dedupe or {i, lid, r}
            end
          end
        end
      end
    end
  end
  -- A lease the policy hands back only to its own user and host is,
  -- for another, replaced: its seat counts free below, a grant ends it.
  local held = by_idem or by_dedupe
  if held and hands_back(P, held[1], held[2], held[3]) then
    return hand_back(held[1], held[2], held[3])
  end
  local gone = held and held[1] or 0 -- the pool of the lease replaced

  -- The site policy: judged over the usable pools that may grant.
  local take = 0
  if P then
    local n, limit, any = 0, 0, false
    for i = 1, npools do
      if bad(i) == '' then
        any = true
        use_pool(i)
        local l = confs[i].seats + confs[i].overdraft
        local c = count_of(i)
        if i == gone then
          c = c - 1
        end
        n, limit = n + math.min(c, l), limit + l
      end
    end
    if any then
      -- Every lease a cap counts is a live lease of a pool of the scope:
      -- their number bounds every cap's count (judge reads no cap under it).
      local live = 0
      for i = 1, nscope do
        use_pool(i)
        live = live + count_of(i)
      end
      local refused
      take, refused = judge(P, n, limit, live)
      if refused then
        return reply('POLICYREFUSED', 0, nil, '', n, -1, limit, {}, refused)
      end
    end
  end

  -- 3. The first usable pool with a free seat (and, for a borrow, one whose
  -- limits allow it).
  local sum_n, sum_limit, any_usable, exhausted, refusal = 0, 0, false, false, nil
  local pick, pick_n = nil, 0
  for i = 1, npools do
    if bad(i) == '' then
      any_usable = true
      use_pool(i)
      local conf = confs[i]
      local limit = conf.seats + conf.overdraft
      local n = count_of(i)
      if i == gone then
        n = n - 1
      end
      local why, wn, wl = nil, 0, 0
      local nb, nret = nil, 0
      if borrowing then
        if conf.maxborrow <= 0 then
          why = 'NOBORROW'
        elseif borrow > conf.maxborrow then
          why = 'BORROWLONG'
        elseif conf.exp > 0 and now + borrow > conf.exp then
          why = 'BORROWEXP' -- it would outlive the grant (or the license)
        else
          nb, nret = borrowed_count(now)
          if conf.maxborrowed > 0 and nb + nret >= conf.maxborrowed then
            why, wn, wl = 'BORROWLIMIT', nb + nret, conf.maxborrowed
          elseif conf.maxborrowed == 0 and nret > 0 and nb + nret >= limit then
            why, wn, wl = 'BORROWLIMIT', nb + nret, limit
          end
        end
      end
      if why then
        refusal = refusal or {why, i, wn, wl}
      elseif n >= limit then
        exhausted = true
        sum_n, sum_limit = sum_n + n, sum_limit + limit
      else
        pick, pick_n = i, n
        break
      end
    end
  end
  if not pick then
    if not any_usable then
      return reply('UNUSABLE', 0)
    end
    if exhausted or not refusal then
      return reply('EXHAUSTED', 0, nil, '', sum_n, -1, sum_limit)
    end
    local out = reply(refusal[1], refusal[2], nil, '', refusal[3], -1, refusal[4])
    out[4] = now -- the time it was judged at, in place of acquired
    return out
  end

  local i = pick
  use_pool(i)
  local conf = confs[i]
  local limit = conf.seats + conf.overdraft
  if redis.call('HEXISTS', K_LEASES, id) == 1 or redis.call('HEXISTS', K_EXP, id) == 1 then
    return reply('DUP', i, nil, '', 0, -1, limit)
  end
  -- The leases waiting in the pool's expiring hash are named (acquire.lua).
  local displaced = {}
  for _, lid in ipairs(redis.call('HKEYS', K_EXP)) do
    displaced[#displaced + 1] = i
    displaced[#displaced + 1] = lid
  end
  -- The lease replaced leaves the live state for the expiring hash,
  -- holding no seat: the caller records it revoked (as take.lua's).
  local replaced = {}
  if held then
    local j, lid, hr = held[1], held[2], held[3]
    use_pool(j)
    if j ~= i then
      counts[j] = count_of(j) - 1
    end
    local raw = redis.call('HGET', K_LEASES, lid)
    unlink(lid, hr)
    redis.call('HSET', K_EXP, lid, raw)
    replaced = {j, lid, hr[HB], hr[DL]}
  end
  -- The lapsed leases of this acquisition's keys, in whichever pool, end
  -- with the grant (invariant 4).
  for k = 1, #keyed, 2 do
    local j, lid = keyed[k], keyed[k + 1]
    use_pool(j)
    local raw = redis.call('HGET', K_LEASES, lid)
    if raw then
      unlink(lid, unpack_rec(raw))
      redis.call('HSET', K_EXP, lid, raw)
      displaced[#displaced + 1] = j
      displaced[#displaced + 1] = lid
    end
  end
  -- So do the lapsed leases in the way of the policy's caps and
  -- reservations (policy.lua), which judges all the pools that may grant
  -- (the policy's judgement above has looked at them all).
  if P then
    policy_ends(P, take, i, npools, nscope, bads, confs, displaced)
  end
  use_pool(i)
  -- The seats of the earliest lapsed leases the grant needs.
  local total = redis.call('ZCARD', K_DL)
  if total >= limit then
    for _, lid in ipairs(redis.call('ZRANGE', K_DL, 0, total - limit)) do
      local raw = redis.call('HGET', K_LEASES, lid)
      if raw then
        unlink(lid, unpack_rec(raw))
        redis.call('HSET', K_EXP, lid, raw)
        displaced[#displaced + 1] = i
        displaced[#displaced + 1] = lid
      else
        redis.call('ZREM', K_DL, lid)
      end
    end
  end
  local was = first_deadline()
  local dk = dks[i]
  local r = {tok, now, now, now + conf.ttl, dk, idem, 0}
  if borrowing then
    r[DL], r[BOR] = now + borrow, 1
    redis.call('ZADD', K_BOR, fmt(r[DL]), id)
  end
  put_rec(K_LEASES, id, r)
  redis.call('ZADD', K_DL, fmt(r[DL]), id)
  if dk ~= '' then
    redis.call('HSET', K_DEDUPE, dk, id)
    keys_in[i] = true
  end
  if idem ~= '' then
    redis.call('HSET', K_IDEM, idem, id)
    keys_in[i] = true
  end
  if P then
    local m = index_members(P, i, id, take)
    if #m > 0 then
      local args = {}
      for _, x in ipairs(m) do
        args[#args + 1] = 0
        args[#args + 1] = x
      end
      redis.call('ZADD', K_IDX, unpack(args))
    end
  end
  local n = pick_n
  if r[DL] > now then
    n = n + 1
  end
  counts[i] = n
  return reply('NEW', i, r, id, n, was, limit, displaced, take, replaced)
end

-- The pools' settings (epoch, version), usable() statuses and starts,
-- once for all the acquisitions of the run, of the pools they looked at
-- ('' for the others; every pool when one of them was UNUSABLE); the
-- license JSON only of the pools that granted or handed back a lease in
-- it ('' for the others).
local epochs, versions, statuses, starts, jsons = {}, {}, {}, {}, {}
local out = {'OK', jsons, epochs, versions, statuses, starts}
local granted = {}
for b = 1, #ARGV, ARGS_PER do
  local ok, r = pcall(acquire, b + 3)
  if not ok and r == NEED_NAMES then
    r = {'NEEDNAMES', 0, '', 0, 0, 0, 0, 0, -1, '', 0, {}, 0, {}}
  elseif not ok then
    r = {'ERR', 0, tostring(type(r) == 'table' and r.err or r), 0, 0, 0, 0, 0, -1, '', 0, {}, 0, {}}
  end
  if r[2] > 0 then
    granted[r[2]] = true
  end
  for k = 1, OUT_PER do
    out[#out + 1] = r[k]
  end
end
-- (Up to the last pool looked at: a reply of 5 values a pool of 50 costs
-- the caller as much as the rest of it.)
local looked = 0
for i = 1, npools do
  if bads[i] or granted[i] then
    looked = i
  end
end
for i = 1, looked do
  epochs[i], versions[i], statuses[i], starts[i], jsons[i] = '', '', '', '', ''
  local c = confs[i]
  if c and bads[i] then
    epochs[i], versions[i], statuses[i], starts[i] = c.epoch, c.version, bads[i], c.starts
  end
  if granted[i] then
    use_pool(i)
    jsons[i] = redis.call('HGET', K_CONF, 'json') or ''
  end
end
return out
