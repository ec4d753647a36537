-- KEYS[1] waiters zset (ticket -> place: join sequence - level * 2^42),
-- KEYS[2] sequence,
-- KEYS[3] alive zset (ticket -> the time its liveness runs out, ms),
-- KEYS[4] aside zset (ticket -> place: the waiters standing aside)
-- ARGV[1] new ticket id, ARGV[2] max length, ARGV[3] liveness ms,
-- ARGV[4] ticket to resume ('' for none), ARGV[5] priority level (-1000 to
-- 1000, checked by the caller; absent: 0)
-- Returns {length, resumed}: resumed is 1 when ARGV[1] took over the place
-- (and level) ARGV[4] still held, 0 when ARGV[1] joined behind every
-- waiter of its level or a higher one and ahead of the lower levels;
-- length is -1 when the queue is full. Dead waiters are dropped first so that they never
-- hold places, and a lapsed ticket cannot be resumed. Every step is
-- O(log n) (dropping the dead costs O(log n) each, once).
local now = now_ms()
drop_dead(now)
local until_ = now + tonumber(ARGV[3])
local kept = ARGV[4] ~= '' and redis.call('ZSCORE', KEYS[1], ARGV[4])
if kept then
  -- The place moves to the new ticket: a stream still holding the old one
  -- (its client gave up on it first) loses it, and its Leave does nothing.
  -- The new one does not stand aside: its stream has not tried yet.
  redis.call('ZREM', KEYS[1], ARGV[4])
  redis.call('ZREM', KEYS[3], ARGV[4])
  redis.call('ZREM', KEYS[4], ARGV[4])
  redis.call('ZADD', KEYS[1], kept, ARGV[1])
  redis.call('ZADD', KEYS[3], until_, ARGV[1])
  return {redis.call('ZCARD', KEYS[1]), 1}
end
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then
  return {-1, 0}
end
if n == 0 then
  redis.call('DEL', KEYS[2]) -- an empty queue starts its sequence anew
end
local seq = redis.call('INCR', KEYS[2])
-- Higher levels first, then join order: exact integers while |place| <
-- 2^53 (levels within +-1000, fewer than 2^42 joins before the queue
-- empties).
local place = seq - (tonumber(ARGV[5]) or 0) * 4398046511104
redis.call('ZADD', KEYS[1], place, ARGV[1])
redis.call('ZADD', KEYS[3], until_, ARGV[1])
return {n + 1, 0}
