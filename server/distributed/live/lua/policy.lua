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

-- held_live says whether the lease of an index member (rest: pool \0
-- lease) is live (true), lapsed (false) or gone from its pool (nil).
local function held_live(rest)
  if rest == P_GONE then
    return false -- its seat is the acquisition's to take (hands_back)
  end
  local z = string.find(rest, '\0', 1, true)
  local i = z and pool_at[string.sub(rest, 1, z - 1)]
  if not i then
    return nil
  end
  local dl = redis.call('ZSCORE', KEYS[(i - 1) * POOL_KEYS + 3], string.sub(rest, z + 1))
  if not dl then
    return nil
  end
  return tonumber(dl) > P_NOW
end

-- count_prefix counts the live leases of the members that start with
-- prefix (which ends with \0: the byte after it is a pool's name or \0,
-- never 0xFF), and removes the members whose lease is gone.
local function count_prefix(prefix)
  local n = 0
  for _, m in ipairs(redis.call('ZRANGEBYLEX', P_IDX, '[' .. prefix, '(' .. prefix .. '\255')) do
    local live = held_live(string.sub(m, #prefix + 1))
    if live == nil then
      redis.call('ZREM', P_IDX, m)
    elseif live then
      n = n + 1
    end
  end
  return n
end

-- count_names counts the live leases of the scope held by any of names
-- (users: tag 'u', hosts: 'h'): a range read per name, or, for a group
-- with more members than the scope has holders, one read of all holders.
local function count_names(scope, tag, names)
  local lo = scope .. '\0' .. tag .. '\0'
  local per_name = #names <= 16
  if not per_name then
    per_name = #names * 4 <= redis.call('ZLEXCOUNT', P_IDX, '[' .. lo, '(' .. lo .. '\255')
  end
  local n = 0
  if per_name then
    for _, name in ipairs(names) do
      n = n + count_prefix(lo .. name .. '\0')
    end
    return n
  end
  local set = {}
  for _, name in ipairs(names) do
    set[name] = true
  end
  for _, m in ipairs(redis.call('ZRANGEBYLEX', P_IDX, '[' .. lo, '(' .. lo .. '\255')) do
    local rest = string.sub(m, #lo + 1)
    local z = string.find(rest, '\0', 1, true)
    if z and set[string.sub(rest, 1, z - 1)] then
      local live = held_live(string.sub(rest, z + 1))
      if live == nil then
        redis.call('ZREM', P_IDX, m)
      elseif live then
        n = n + 1
      end
    end
  end
  return n
end

-- judge is server.Judge of decision P over n leases of limit: the
-- reservation to take (0: a shared seat), or nil and the refusal's counts
-- {caps, reservations}. A count at its limit (n >= limit) answers 0: the
-- caller refuses that with its own count (acquire_pools.lua EXHAUSTED).
local function judge(P, n, limit)
  if P[4] == 1 then
    return nil, {{}, {}}
  end
  local scope, caps = P[1], {}
  for k, c in ipairs(P[6]) do
    caps[k] = count_names(scope, c[1], c[3])
    if caps[k] >= c[2] then
      return nil, {caps, {}}
    end
  end
  local held, unused, take = {}, 0, 0
  for k, r in ipairs(P[7]) do
    held[k] = count_prefix(scope .. '\0r\0' .. r[1] .. '\0')
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
