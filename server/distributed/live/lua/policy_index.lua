-- policy_index.lua builds the site-policy index of a license (KEYS[1] the
-- index, KEYS[2] its marker: ../keys.go Policy) from the active sessions
-- the record holds, a chunk of members a call (acquire_pools.lua says what
-- the members are). Nothing is granted on the license until the marker
-- holds the generation of its policy, which the last call writes; until
-- then the marker holds 'b:' .. the build's token. Members are added to
-- the index as they come: the index may hold members of ended leases
-- (they are removed as they are met), never lack one of a live lease.
-- A rebuild of any pool of the license (rebuild.lua) and a loss of Redis
-- take the marker away: a build that began before finds it gone and
-- starts again, from a new snapshot.
-- ARGV: 1 op, 2 token, 3 generation, then (add) index members.
--   'begin': joins the build under way (its token), or starts one under
--     token ARGV[2]: {'BUILDING', token}; {'BUILT'} if the marker holds the
--     generation already.
--   'add': writes the members, if a build is under way or the index is
--     built: 'OK', else 'LOST'.
--   'end': the marker := the generation, if it still holds the build's
--     token (or the generation: another joiner ended it): 'OK', else 'LOST'.
local K_IDX, K_MARK = KEYS[1], KEYS[2]
local op, token, gen = ARGV[1], ARGV[2], ARGV[3]
local mark = redis.call('GET', K_MARK)
if op == 'begin' then
  if mark == gen then
    return {'BUILT'}
  end
  if mark and string.sub(mark, 1, 2) == 'b:' then
    return {'BUILDING', string.sub(mark, 3)}
  end
  redis.call('SET', K_MARK, 'b:' .. token)
  return {'BUILDING', token}
end
if not mark or (mark ~= gen and string.sub(mark, 1, 2) ~= 'b:') then
  return 'LOST'
end
if op == 'add' then
  local args = {}
  for i = 4, #ARGV do
    args[#args + 1] = 0
    args[#args + 1] = ARGV[i]
  end
  if #args > 0 then
    redis.call('ZADD', K_IDX, unpack(args))
  end
  return 'OK'
end
-- 'end'
if mark ~= gen and mark ~= 'b:' .. token then
  return 'LOST'
end
redis.call('SET', K_MARK, gen)
return 'OK'
