-- peek.lua reads the live data of leases (what the heartbeat write-behind
-- may not have stored yet) and the time. It changes nothing, and says
-- whether the live state of the license exists (when Redis lost it, what
-- it reads is not what Redis will enforce once it is rebuilt).
-- ARGV: lease ids; none means every lease of the license.
-- Returns {now, 1 | 0 (state exists), id, 'L' (live) | 'X' (expiring),
-- last_hb, deadline, ...}.
local out = {now_us(), redis.call('EXISTS', K_CONF)}
local function emit(id, where, r)
  out[#out + 1] = id
  out[#out + 1] = where
  out[#out + 1] = r[HB]
  out[#out + 1] = r[DL]
end
if #ARGV == 0 then
  local all = redis.call('HGETALL', K_LEASES)
  for i = 1, #all, 2 do
    emit(all[i], 'L', unpack_rec(all[i + 1]))
  end
  all = redis.call('HGETALL', K_EXP)
  for i = 1, #all, 2 do
    emit(all[i], 'X', unpack_rec(all[i + 1]))
  end
  return out
end
for i = 1, #ARGV do
  local id = ARGV[i]
  local r = get_rec(K_LEASES, id)
  if r then
    emit(id, 'L', r)
  else
    r = get_rec(K_EXP, id)
    if r then
      emit(id, 'X', r)
    end
  end
end
return out
