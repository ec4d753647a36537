-- policy.lua follows common.lua in the scripts that judge a license's
-- site policy (acquire_pools.lua, revive.lua; the top of acquire_pools.lua
-- says what the policy index holds and what a decision is). policy_use points the
-- functions below at the index (KEYS), the time of the run, and the
-- names of the pools of the scope in KEYS order (pool_at: a pool's name
-- in the index, '' or the grant's id after the dot, to its place).
local P_IDX, P_NOW, pool_at
local P_GONE -- the member tail (pool \0 lease) of the lease the acquisition replaces, if any
local function policy_use(idx, now, names)
  P_IDX, P_NOW, P_GONE = idx, now, nil
  if not pool_at then
    pool_at = {}
    for i, name in ipairs(names) do
      pool_at[name] = i
    end
  end
end

-- count_live counts the index members ms whose lease is live (rests[j]
-- is the tail of ms[j]: pool \0 lease), and removes from the index those
-- whose lease is gone. The deadlines are read with one ZMSCORE a pool,
-- not one call a member: a count reads as many members as it has holders.
local function count_live(ms, rests)
  local by_pool, n, gone = {}, 0, {}
  for j, m in ipairs(ms) do
    local rest = rests[j]
    if rest ~= P_GONE then
      local z = string.find(rest, '\0', 1, true)
      local i = z and pool_at[string.sub(rest, 1, z - 1)]
      if not i then
        gone[#gone + 1] = m
      else
        local b = by_pool[i]
        if not b then
          b = {ids = {}, ms = {}}
          by_pool[i] = b
        end
        b.ids[#b.ids + 1] = string.sub(rest, z + 1)
        b.ms[#b.ms + 1] = m
      end
    end
  end
  for i, b in pairs(by_pool) do
    local dls = redis.call('ZMSCORE', KEYS[(i - 1) * POOL_KEYS + 3], unpack(b.ids))
    for j = 1, #b.ids do
      local dl = dls[j]
      if not dl then
        gone[#gone + 1] = b.ms[j]
      elseif tonumber(dl) > P_NOW then
        n = n + 1
      end
    end
  end
  if #gone > 0 then
    redis.call('ZREM', P_IDX, unpack(gone))
  end
  return n
end

-- count_prefix counts the live leases of the members that start with
-- prefix (which ends with \0: the byte after it is a pool's name or \0,
-- never 0xFF), and removes the members whose lease is gone. Given below,
-- a count that cannot reach it is not read member by member: the
-- members' number (ZLEXCOUNT, lapsed and gone ones too) is returned when
-- it is under below, an upper bound that judges the same.
local function count_prefix(prefix, below)
  local lo, hi = '[' .. prefix, '(' .. prefix .. '\255'
  if below then
    local upper = redis.call('ZLEXCOUNT', P_IDX, lo, hi)
    if upper < below then
      return upper
    end
  end
  local ms, rests = redis.call('ZRANGEBYLEX', P_IDX, lo, hi), {}
  for j, m in ipairs(ms) do
    rests[j] = string.sub(m, #prefix + 1)
  end
  return count_live(ms, rests)
end

-- count_names counts the live leases of the scope held by any of names
-- (users: tag 'u', hosts: 'h'), as count_prefix with below: for more
-- than one name (a group's members, as a string to decode: ../policy.go
-- Judgement encode) the number of all the scope's holders of the tag
-- first, an upper bound, and only if it could reach below, a range read
-- per name, or, for a group with more members than the scope has
-- holders, one read of all holders. A group's members left out of the
-- decision (names: a number) are needed only past the upper bound: it
-- then raises NEED_NAMES (the acquisition, which has written nothing,
-- answers NEEDNAMES and its caller asks again with them).
local NEED_NAMES = {'the decision left out the members of a group whose count needs them'}
local function count_names(scope, tag, names, below)
  local lo = scope .. '\0' .. tag .. '\0'
  if type(names) == 'number' then
    -- A group's members left out (../policy.go Judgement GroupsWanted):
    -- they are needed only once the upper bound reaches below.
    local holders = redis.call('ZLEXCOUNT', P_IDX, '[' .. lo, '(' .. lo .. '\255')
    if holders < below then
      return holders
    end
    error(NEED_NAMES)
  end
  if type(names) ~= 'string' and #names <= 1 then
    return names[1] and count_prefix(lo .. names[1] .. '\0', below) or 0
  end
  local holders = redis.call('ZLEXCOUNT', P_IDX, '[' .. lo, '(' .. lo .. '\255')
  if holders < below then
    return holders
  end
  if type(names) == 'string' then
    names = cjson.decode(names)
  end
  local n = 0
  if #names <= 16 or #names * 4 <= holders then
    for _, name in ipairs(names) do
      n = n + count_prefix(lo .. name .. '\0')
    end
    return n
  end
  local set = {}
  for _, name in ipairs(names) do
    set[name] = true
  end
  local ms, rests = {}, {}
  for _, m in ipairs(redis.call('ZRANGEBYLEX', P_IDX, '[' .. lo, '(' .. lo .. '\255')) do
    local rest = string.sub(m, #lo + 1)
    local z = string.find(rest, '\0', 1, true)
    if z and set[string.sub(rest, 1, z - 1)] then
      ms[#ms + 1] = m
      rests[#rests + 1] = string.sub(rest, z + 1)
    end
  end
  return count_live(ms, rests)
end

-- judge is server.Judge of decision P over n leases of limit: the
-- reservation to take (0: a shared seat), or nil and the refusal's counts
-- {caps, reservations}. live, if given, is a bound of every cap's count
-- (the live leases of the scope's pools): a cap whose limit it is under
-- is not read, its count that bound. A count at its limit (n >= limit)
-- answers 0: the caller refuses that with its own count (acquire_pools.lua
-- EXHAUSTED).
-- It reads no more than the verdict needs: a cap's count far under its
-- limit is an upper bound (count_names), and while the seats free would
-- outnumber every reservation's seats (n + reserved < limit) the
-- reservations of others are not counted, nor the acquisition's own
-- beyond knowing it has a seat free (both judge the same; a refusal's
-- counts are always exact).
local function judge(P, n, limit, live)
  if P[4] == 1 then
    return nil, {{}, {}}
  end
  local scope, caps = P[1], {}
  for k, c in ipairs(P[6]) do
    if live and live < c[2] then
      caps[k] = live
    else
      caps[k] = count_names(scope, c[1], c[3], c[2])
      if caps[k] >= c[2] then
        return nil, {caps, {}}
      end
    end
  end
  local reserved = 0
  for _, r in ipairs(P[7]) do
    reserved = reserved + r[2]
  end
  local exact = n + reserved >= limit
  local held, unused, take = {}, 0, 0
  for k, r in ipairs(P[7]) do
    if exact then
      held[k] = count_prefix(scope .. '\0r\0' .. r[1] .. '\0')
    elseif r[3] == 1 and take == 0 then
      held[k] = count_prefix(scope .. '\0r\0' .. r[1] .. '\0', r[2])
    else
      held[k] = 0 -- not read: the verdict does not depend on it
    end
    local free = math.max(0, r[2] - held[k])
    unused = unused + free
    if take == 0 and r[3] == 1 and free > 0 then
      take = k
    end
  end
  if n >= limit then
    return 0
  end
  if take > 0 or n + unused < limit then
    return take
  end
  return nil, {caps, held}
end

-- index_members are the index members of lease id of pool i under P, with
-- the reservation k it took (0: none).
local function index_members(P, i, id, k)
  local tail = '\0' .. P[5][i] .. '\0' .. id
  local out = {P[1] .. '\0i\0' .. P[2] .. '\0' .. P[3] .. tail}
  if P[2] ~= '' then
    out[#out + 1] = P[1] .. '\0u\0' .. P[2] .. tail
  end
  if P[3] ~= '' then
    out[#out + 1] = P[1] .. '\0h\0' .. P[3] .. tail
  end
  if k > 0 then
    out[#out + 1] = P[1] .. '\0r\0' .. P[7][k][1] .. tail
  end
  return out
end

-- taken is the reservation a lease of pool i granted under P took, from
-- its index members (a replayed grant).
local function taken(P, i, id)
  for k = 1, #P[7] do
    local m = index_members(P, i, id, k)
    if redis.call('ZSCORE', P_IDX, m[#m]) then
      return k
    end
  end
  return 0
end


-- policy_ends ends the lapsed leases in the way of a grant under P (the
-- reservation take, 0 a shared seat) from pool from, as
-- server/embedded/policy.go policyEnds does (server.PolicyStore): a
-- lapsed lease may come back unjudged (the write-behind slack after a
-- loss of Redis gives every active lease time back), so the grant must
-- hold with the lapsed leases counted too (but borrowed ones: they never
-- come back). While that judgment refuses, the earliest (deadline, then
-- id) lapsed lease that counts in the refusing figure ends: one under the
-- refusing cap (of any pool of the scope); for the seat count, one of
-- from, else of the usable pools; for a reservation, one of the usable
-- pools that is shared (or of a reservation over its seats, or of take),
-- else any of them. It ends as the seat count's displaced leases do: out
-- of the live state into the expiring hash, named in displaced (pool,
-- id ...), for the caller to record expired. The others keep their
-- chance to revive. Call it once the other leases ending with the grant
-- are out of the live state, before the seat count's displacement.
local function policy_ends(P, take, from, npools, nscope, bads, confs, displaced)
  if #P[6] == 0 and #P[7] == 0 then
    return
  end
  local now = fmt(P_NOW)
  local function dl_key(i) return KEYS[(i - 1) * POOL_KEYS + 3] end
  local function leases_key(i) return KEYS[(i - 1) * POOL_KEYS + 2] end
  -- Nothing lapsed in the scope (the usual case): nothing in the way.
  local any = false
  for i = 1, nscope do
    if redis.call('ZCOUNT', dl_key(i), '-inf', now) > 0 then
      any = true
      break
    end
  end
  if not any then
    return
  end

  local function borrowed(i, id)
    local raw = redis.call('HGET', leases_key(i), id)
    return not raw or unpack_rec(raw)[BOR] ~= nil
  end
  -- lease_of is the lease of an index member (rest: pool \0 lease) if it
  -- counts: {pool, id, deadline, lapsed}; nil if it is gone, or borrowed
  -- and lapsed.
  local function lease_of(rest)
    local z = string.find(rest, '\0', 1, true)
    local i = z and pool_at[string.sub(rest, 1, z - 1)]
    if not i then
      return nil
    end
    local id = string.sub(rest, z + 1)
    local dl = redis.call('ZSCORE', dl_key(i), id)
    if not dl then
      return nil
    end
    dl = tonumber(dl)
    if dl > P_NOW then
      return {i, id, dl, false}
    end
    if borrowed(i, id) then
      return nil
    end
    return {i, id, dl, true}
  end
  local function each_member(prefix, f)
    for _, m in ipairs(redis.call('ZRANGEBYLEX', P_IDX, '[' .. prefix, '(' .. prefix .. '\255')) do
      local l = lease_of(string.sub(m, #prefix + 1))
      if l then
        f(l)
      end
    end
  end
  -- each_under calls f with each lease that counts under cap c (as
  -- count_names reads them).
  local function each_under(c, f)
    local lo = P[1] .. '\0' .. c[1] .. '\0'
    local names = c[3]
    if type(names) == 'number' then
      -- A group's members left out: judge found the upper bound of its
      -- count (every lease under it, lapsed ones too) under its limit,
      -- so the cap refuses nothing (count_names).
      return
    end
    if type(names) == 'string' then
      names = cjson.decode(names)
    end
    if #names <= 16 or #names * 4 <= redis.call('ZLEXCOUNT', P_IDX, '[' .. lo, '(' .. lo .. '\255') then
      for _, name in ipairs(names) do
        each_member(lo .. name .. '\0', f)
      end
      return
    end
    local set = {}
    for _, name in ipairs(names) do
      set[name] = true
    end
    for _, m in ipairs(redis.call('ZRANGEBYLEX', P_IDX, '[' .. lo, '(' .. lo .. '\255')) do
      local rest = string.sub(m, #lo + 1)
      local z = string.find(rest, '\0', 1, true)
      local l = z and set[string.sub(rest, 1, z - 1)] and lease_of(string.sub(rest, z + 1))
      if l then
        f(l)
      end
    end
  end
  -- reservation_of is the reservation of P a lease took (0: none of them).
  local function reservation_of(i, id)
    for k, r in ipairs(P[7]) do
      if redis.call('ZSCORE', P_IDX, P[1] .. '\0r\0' .. r[1] .. '\0' .. P[5][i] .. '\0' .. id) then
        return k
      end
    end
    return 0
  end
  -- first_lapsed is the earliest lapsed lease of pool i (not borrowed)
  -- that ok accepts, or nil.
  local function first_lapsed(i, ok)
    local off = 0
    while true do
      local batch = redis.call('ZRANGEBYSCORE', dl_key(i), '-inf', now, 'WITHSCORES', 'LIMIT', off, 64)
      if #batch == 0 then
        return nil
      end
      for j = 1, #batch, 2 do
        local id = batch[j]
        if not borrowed(i, id) and ok(i, id) then
          return {i, id, tonumber(batch[j + 1]), true}
        end
      end
      off = off + 64
    end
  end
  -- The lapsed borrowed leases of a pool (its count with the lapsed
  -- ones is its deadlines' size less those), counted only when the
  -- judgment refuses without them taken off.
  local lapsed_borrowed = {}
  local function pool_count(i, exact)
    local n = redis.call('ZCARD', dl_key(i))
    if exact then
      if not lapsed_borrowed[i] then
        lapsed_borrowed[i] = 0
        for _, id in ipairs(redis.call('ZRANGEBYSCORE', dl_key(i), '-inf', now)) do
          if borrowed(i, id) then
            lapsed_borrowed[i] = lapsed_borrowed[i] + 1
          end
        end
      end
      n = n - lapsed_borrowed[i]
    end
    return n
  end
  -- seats_verdict is server.Judge past the caps, with the lapsed leases
  -- counted: nil (granted), 'seats' or 'reserved' and the reservations'
  -- counts.
  local function seats_verdict(exact)
    local n, limit = 0, 0
    for i = 1, npools do
      if bads[i] == '' then
        local l = confs[i].seats + confs[i].overdraft
        n, limit = n + math.min(pool_count(i, exact), l), limit + l
      end
    end
    local held, unused, takes = {}, 0, false
    for k, r in ipairs(P[7]) do
      held[k] = 0
      each_member(P[1] .. '\0r\0' .. r[1] .. '\0', function() held[k] = held[k] + 1 end)
      local free = math.max(0, r[2] - held[k])
      unused = unused + free
      takes = takes or (k == take and free > 0)
    end
    if n >= limit then
      return 'seats', held
    end
    if takes or n + unused < limit then
      return nil
    end
    return 'reserved', held
  end

  local all = function() return true end
  while true do
    local best
    local function consider(l)
      if l and l[4] and (not best or l[3] < best[3] or l[3] == best[3] and l[2] < best[2]) then
        best = l
      end
    end
    local refused = false
    for _, c in ipairs(P[6]) do
      local n = 0
      best = nil
      each_under(c, function(l)
        n = n + 1
        consider(l)
      end)
      if n >= c[2] then
        refused = true
        break
      end
    end
    if not refused then
      best = nil
      local why, held = seats_verdict(false)
      if why then
        why, held = seats_verdict(true)
      end
      if not why then
        return
      end
      if why == 'seats' then
        consider(first_lapsed(from, all))
      else
        -- Ending a lease of a reservation within its seats frees a seat
        -- and adds an unused reserved one: nothing changes.
        local over = {}
        for k, r in ipairs(P[7]) do
          over[k] = held[k] > r[2] or k == take
        end
        local function shared_or_over(i, id)
          local k = reservation_of(i, id)
          return k == 0 or over[k]
        end
        for i = 1, npools do
          if bads[i] == '' then
            consider(first_lapsed(i, shared_or_over))
          end
        end
      end
      if not best then
        for i = 1, npools do
          if bads[i] == '' then
            consider(first_lapsed(i, all))
          end
        end
      end
    end
    if not best then
      return -- cannot be: the live counts granted
    end
    local i, id = best[1], best[2]
    local raw = redis.call('HGET', leases_key(i), id)
    use_pool(i)
    unlink(id, unpack_rec(raw))
    redis.call('HSET', K_EXP, id, raw)
    displaced[#displaced + 1] = i
    displaced[#displaced + 1] = id
  end
end

-- hands_back says whether the live lease lid (record r) of pool i, of
-- the acquisition's keys, is handed back to it under decision P: always
-- without rules for the pool (P nil, or P[8] ~= 1) and for a borrowed
-- lease; else only to a request of the lease's own user and host (its
-- member 'i', which holds both, empty ones too). If not, the lease's seat
-- counts free in the judgement that follows: the grant replaces it.
local function hands_back(P, i, lid, r)
  if not P or P[8] ~= 1 or r[BOR] then
    return true
  end
  local tail = P[5][i] .. '\0' .. lid
  if redis.call('ZSCORE', P_IDX, P[1] .. '\0i\0' .. P[2] .. '\0' .. P[3] .. '\0' .. tail) then
    return true
  end
  P_GONE = tail
  return false
end
