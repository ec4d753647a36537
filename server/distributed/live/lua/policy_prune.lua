-- policy_prune.lua removes from a license's site-policy index (KEYS[1],
-- its marker KEYS[2]: ../keys.go Policy) the members whose lease is no
-- longer in its pool (ended, expiring, its grant deleted), up to ARGV[2]
-- members a call after the member ARGV[1] ('' from the first): the members
-- acquisitions meet are removed as they count, the others (holders who do
-- not come back) by this, which the cleanup leader runs now and then. An
-- index being built (the marker is not a generation) is left alone, and
-- so is one whose license's settings (KEYS[3]) hold another version than
-- ARGV[3], the one the pools were read at: a grant created since may have
-- live leases, whose members must stay (the index never loses a member of
-- a live lease: a lease granted, not yet recorded, is in no snapshot).
-- KEYS[4..]: the deadlines of each pool of the license; ARGV[4..]: the
-- name of each ('' the license's own, else its grant's id after the dot).
-- A member is scope \0 tag \0 name \0 pool \0 lease, the name of a
-- reservation ('r') or an identity ('i': user \0 host) holding one \0 of
-- its own (acquire_pools.lua).
-- Returns {the last member read ('' when the index is done), removed}.
local K_IDX, K_MARK, K_LIC = KEYS[1], KEYS[2], KEYS[3]
local mark = redis.call('GET', K_MARK)
if not mark or string.sub(mark, 1, 2) == 'b:' then
  return {'', 0}
end
if redis.call('HGET', K_LIC, 'version') ~= ARGV[3] then
  return {'', 0}
end
local pools = {}
for i = 4, #ARGV do
  pools[ARGV[i]] = KEYS[i]
end
local limit = tonumber(ARGV[2])
local from = '-'
if ARGV[1] ~= '' then
  from = '(' .. ARGV[1]
end
local members = redis.call('ZRANGEBYLEX', K_IDX, from, '+', 'LIMIT', 0, limit)
local removed = 0
for _, m in ipairs(members) do
  local keep = false
  local a = string.find(m, '\0', 1, true)
  local z = a and string.find(m, '\0', a + 3, true)
  local tag = a and string.sub(m, a + 1, a + 1)
  if z and (tag == 'r' or tag == 'i') then
    z = string.find(m, '\0', z + 1, true)
  end
  local e = z and string.find(m, '\0', z + 1, true)
  if e then
    local dl = pools[string.sub(m, z + 1, e - 1)]
    keep = dl and redis.call('ZSCORE', dl, string.sub(m, e + 1))
  end
  if not keep then
    redis.call('ZREM', K_IDX, m)
    removed = removed + 1
  end
end
if #members < limit then
  return {'', removed}
end
return {members[#members], removed}
