-- fixhint.lua repairs a hint that is too early (the leases it pointed at
-- were renewed or ended): compare-and-set, applied only if neither the
-- hint nor its generation changed since the caller read them.
-- KEYS as hint.lua. ARGV: 1 license id, 2 hint seen, 3 generation seen,
--   4 earliest deadline now (-1: the license holds no lease, drop the hint).
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not cur or tonumber(cur) ~= tonumber(ARGV[2]) then
  return 0
end
if (redis.call('HGET', KEYS[2], ARGV[1]) or '0') ~= ARGV[3] then
  return 0
end
if tonumber(ARGV[4]) < 0 then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
end
return 1
