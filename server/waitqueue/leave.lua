-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] alive zset, KEYS[4] aside zset
-- ARGV[1] ticket id. Removes the waiter (after dropping the dead ones);
-- the last one out removes the queue's keys, so that no key outlives its
-- waiters. Returns the ticket of the waiter now in its place when it was
-- the waiter's turn and it did not stand aside (that waiter's turn now:
-- without a policy, the new head), '' otherwise: the caller tells it at
-- once. O(log n).
drop_dead(now_ms())
local place = redis.call('ZSCORE', KEYS[1], ARGV[1])
local passes = false
local rank
if place then
  rank = redis.call('ZRANK', KEYS[1], ARGV[1])
  passes = not redis.call('ZSCORE', KEYS[4], ARGV[1]) and is_turn(place, rank)
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
if redis.call('ZCARD', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  return ''
end
if passes then
  return redis.call('ZRANGE', KEYS[1], rank, rank)[1] or ''
end
return ''
