-- fixhint.lua repairs a hint that is too early (the leases it pointed at
-- were renewed or ended): compare-and-set, applied only if neither the
-- hint nor its generation changed since the caller read them.
-- KEYS as hint.lua. ARGV: 1 license id, 2 hint seen, 3 generation seen,
--   4 earliest deadline now (-1: the license holds no lease, drop the hint);
--   further groups of four for more licenses, each applied on its own.
-- Returns the number of hints repaired.
local n = 0
for i = 1, #ARGV, 4 do
  local lic = ARGV[i]
  local cur = redis.call('ZSCORE', KEYS[1], lic)
  if cur and tonumber(cur) == tonumber(ARGV[i + 1])
    and (redis.call('HGET', KEYS[2], lic) or '0') == ARGV[i + 2] then
    if tonumber(ARGV[i + 3]) < 0 then
      redis.call('ZREM', KEYS[1], lic)
    else
      redis.call('ZADD', KEYS[1], ARGV[i + 3], lic)
    end
    n = n + 1
  end
end
return n
