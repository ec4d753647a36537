-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] alive zset
-- ARGV[1] ticket id. Removes the waiter (after dropping the dead ones);
-- the last one out removes the queue's keys, so that no key outlives its
-- waiters. Returns the new head's ticket when the waiter was the head
-- ('' otherwise): the caller tells it at once. O(log n).
drop_dead(now_ms())
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('ZCARD', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  return ''
end
if rank == 0 then
  return redis.call('ZRANGE', KEYS[1], 0, 0)[1]
end
return ''
