-- check.lua judges releases: the token first, then whether the lease is
-- still live. A live lease of a pool whose settings have a linger
-- (server/linger.go) is released here, in the same step: it lingers, its
-- last heartbeat now and its deadline now + the linger; else it changes
-- nothing, and the caller records the release in PostgreSQL and then calls
-- end.lua. It takes several leases of the license at once (see
-- ../batch.go) and judges each on its own.
-- ARGV: 1 lease id, 2 token hash, [3 lease id, 4 token hash, ...].
-- Returns {'NOCONF'} | {'DELETED'} for all of them, else
--   {'OK', now, then for each lease: status, acquired, last_hb, deadline,
--    token seq, first deadline of the license before (-1 if none)}
-- with status 'LIVE' | 'LINGERED' (released now: lingers) | 'LINGERING'
-- (released before; its deadline may have passed) | 'NOLEASE' | 'TOKEN' |
-- 'EXPIRED' (the times are 0 unless 'LIVE', 'LINGERED' or 'LINGERING').
local conf, refused = open_conf(ALL_BUT_JSON)
if not conf then
  return refused
end
local now = now_us()
local out = {'OK', now}

local function check(id, tok)
  local r = get_rec(K_LEASES, id)
  if not r then
    local x = get_rec(K_EXP, id)
    if not x then
      return 'NOLEASE'
    end
    if x[TOK] ~= tok then
      return 'TOKEN'
    end
    if x[LINGER] then
      return 'LINGERING', x -- its linger lapsed: being recorded as released
    end
    return 'EXPIRED'
  end
  if r[TOK] ~= tok then
    return 'TOKEN'
  end
  if r[LINGER] then
    return 'LINGERING', r
  end
  if r[DL] <= now then
    return 'EXPIRED'
  end
  if conf.linger <= 0 or r[BOR] then
    return 'LIVE', r
  end
  local was = first_deadline()
  r[HB], r[DL], r[LINGER] = now, now + conf.linger, 1
  put_rec(K_LEASES, id, r)
  redis.call('ZADD', K_DL, fmt(r[DL]), id)
  return 'LINGERED', r, was
end

for i = 1, #ARGV, 2 do
  local status, r, was = check(ARGV[i], ARGV[i + 1])
  out[#out + 1] = status
  if r then
    out[#out + 1] = r[ACQ]
    out[#out + 1] = r[HB]
    out[#out + 1] = r[DL]
    out[#out + 1] = r[SEQ]
  else
    for _ = 1, 4 do
      out[#out + 1] = 0
    end
  end
  out[#out + 1] = was or -1
end
return out
