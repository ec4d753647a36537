-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] liveness key prefix
-- ARGV[1] new ticket id, ARGV[2] max length, ARGV[3] liveness ms,
-- ARGV[4] ticket to resume ('' for none)
-- Returns {length, resumed}: resumed is 1 when ARGV[4] still held its place
-- (its waiter is alive again, place kept), 0 when ARGV[1] joined at the tail;
-- length is -1 when the queue is full. Dead waiters are dropped first so
-- they never hold places, and a lapsed ticket cannot be resumed.
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, m in ipairs(members) do
  if redis.call('EXISTS', KEYS[3] .. m) == 0 then
    redis.call('ZREM', KEYS[1], m)
  end
end
if ARGV[4] ~= '' and redis.call('ZSCORE', KEYS[1], ARGV[4]) then
  redis.call('SET', KEYS[3] .. ARGV[4], '1', 'PX', ARGV[3])
  return {redis.call('ZCARD', KEYS[1]), 1}
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return {-1, 0}
end
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], seq, ARGV[1])
redis.call('SET', KEYS[3] .. ARGV[1], '1', 'PX', ARGV[3])
return {redis.call('ZCARD', KEYS[1]), 0}
