-- KEYS[1] waiters zset, KEYS[3] liveness key prefix
-- ARGV[1] ticket id, ARGV[2] liveness ms
-- Refreshes the ticket's liveness and returns {position, length}, dropping
-- dead waiters ahead of it; position 0 when the ticket is gone.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false then
  return {0, redis.call('ZCARD', KEYS[1])}
end
redis.call('SET', KEYS[3] .. ARGV[1], '1', 'PX', ARGV[2])
local ahead = redis.call('ZRANGE', KEYS[1], 0, -1)
local pos = 0
for _, m in ipairs(ahead) do
  if m == ARGV[1] then
    pos = pos + 1
    break
  end
  if redis.call('EXISTS', KEYS[3] .. m) == 0 then
    redis.call('ZREM', KEYS[1], m)
  else
    pos = pos + 1
  end
end
return {pos, redis.call('ZCARD', KEYS[1])}
