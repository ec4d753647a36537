-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] liveness key prefix
-- ARGV[1] new ticket id, ARGV[2] max length, ARGV[3] liveness ms,
-- ARGV[4] ticket to resume ('' for none)
-- Returns {length, resumed}: resumed is 1 when ARGV[1] took over the place
-- ARGV[4] still held, 0 when ARGV[1] joined at the tail;
-- length is -1 when the queue is full. Dead waiters are dropped first so
-- they never hold places, and a lapsed ticket cannot be resumed.
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, m in ipairs(members) do
  if redis.call('EXISTS', KEYS[3] .. m) == 0 then
    redis.call('ZREM', KEYS[1], m)
  end
end
local kept = ARGV[4] ~= '' and redis.call('ZSCORE', KEYS[1], ARGV[4])
if kept then
  -- The place moves to the new ticket: a stream still holding the old one
  -- (its client gave up on it first) loses it, and its Leave does nothing.
  redis.call('ZREM', KEYS[1], ARGV[4])
  redis.call('DEL', KEYS[3] .. ARGV[4])
  redis.call('ZADD', KEYS[1], kept, ARGV[1])
  redis.call('SET', KEYS[3] .. ARGV[1], '1', 'PX', ARGV[3])
  return {redis.call('ZCARD', KEYS[1]), 1}
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return {-1, 0}
end
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], seq, ARGV[1])
redis.call('SET', KEYS[3] .. ARGV[1], '1', 'PX', ARGV[3])
return {redis.call('ZCARD', KEYS[1]), 0}
