-- due.lua lists the leases of the license whose deadline is at or before
-- the cutoff, ordered by (deadline, id), strictly after the cursor, at most
-- limit of them from the live state plus every expiring one after the
-- cursor. It changes nothing.
-- ARGV: 1 cutoff, 2 cursor deadline ('' = no cursor), 3 cursor id, 4 limit.
-- Returns {'NOCONF'} or {'OK', min deadline (-1 = none), id, deadline, ...}.
if redis.call('HEXISTS', K_CONF, 'epoch') == 0 then
  return {'NOCONF'} -- as load_conf: no live state
end
local cutoff = tonumber(ARGV[1])
local has_cursor = ARGV[2] ~= ''
local cdl = tonumber(ARGV[2] ~= '' and ARGV[2] or '0')
local cid = ARGV[3]
local limit = tonumber(ARGV[4])

local function after_cursor(dl, id)
  if not has_cursor then
    return true
  end
  return dl > cdl or (dl == cdl and id > cid)
end

-- out[2] becomes min_deadline(): the first live deadline, lowered below by
-- the expiring leases.
local out = {'OK', first_deadline()}
local found = 0
local min = has_cursor and fmt(cdl) or '-inf'
local offset = 0
local chunk = limit + 16
while found < limit do
  local page = redis.call('ZRANGEBYSCORE', K_DL, min, fmt(cutoff), 'WITHSCORES', 'LIMIT', offset, chunk)
  if #page == 0 then
    break
  end
  for i = 1, #page, 2 do
    local id, dl = page[i], tonumber(page[i + 1])
    if after_cursor(dl, id) and found < limit then
      out[#out + 1] = id
      out[#out + 1] = dl
      found = found + 1
    end
  end
  offset = offset + chunk
end
local xs = redis.call('HGETALL', K_EXP)
for i = 1, #xs, 2 do
  local r = unpack_rec(xs[i + 1])
  if out[2] < 0 or r[DL] < out[2] then
    out[2] = r[DL]
  end
  if after_cursor(r[DL], xs[i]) then
    out[#out + 1] = xs[i]
    out[#out + 1] = r[DL]
  end
end
return out
