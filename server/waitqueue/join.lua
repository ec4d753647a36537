-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] liveness key prefix
-- ARGV[1] ticket id, ARGV[2] max length, ARGV[3] liveness ms
-- Returns the new length, or -1 when the queue is full (dead waiters are
-- dropped first so they never hold places).
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, m in ipairs(members) do
  if redis.call('EXISTS', KEYS[3] .. m) == 0 then
    redis.call('ZREM', KEYS[1], m)
  end
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return -1
end
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], seq, ARGV[1])
redis.call('SET', KEYS[3] .. ARGV[1], '1', 'PX', ARGV[3])
return redis.call('ZCARD', KEYS[1])
