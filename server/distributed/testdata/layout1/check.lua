-- check.lua judges releases: the token first, then whether the lease is
-- still live. It changes nothing; the caller records the release in
-- PostgreSQL and then calls end.lua. It takes several leases of the
-- license at once (see ../batch.go) and judges each on its own.
-- ARGV: 1 lease id, 2 token hash, [3 lease id, 4 token hash, ...].
-- Returns {'NOCONF'} | {'DELETED'} for all of them, else
--   {'OK', now, then for each lease: status, acquired, last_hb, deadline}
-- with status 'LIVE' | 'NOLEASE' | 'TOKEN' | 'EXPIRED' (the times are 0
-- unless 'LIVE').
local conf, refused = open_conf()
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
    return 'EXPIRED'
  end
  if r[TOK] ~= tok then
    return 'TOKEN'
  end
  if r[DL] <= now then
    return 'EXPIRED'
  end
  return 'LIVE', r[ACQ], r[HB], r[DL]
end

for i = 1, #ARGV, 2 do
  local status, acq, hb, dl = check(ARGV[i], ARGV[i + 1])
  out[#out + 1] = status
  out[#out + 1] = acq or 0
  out[#out + 1] = hb or 0
  out[#out + 1] = dl or 0
end
return out
