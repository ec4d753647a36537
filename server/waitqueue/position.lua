-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] alive zset, KEYS[4] aside zset
-- ARGV[1] ticket id, ARGV[2] liveness ms
-- Refreshes the ticket's liveness and returns {position, length, turn},
-- after dropping dead waiters; position 0 when the ticket is gone; turn 1
-- when every waiter ahead of it stands aside. O(log n): ZRANK and ZCOUNT,
-- not a walk of the queue.
local now = now_ms()
drop_dead(now)
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
if not rank then
  if n == 0 then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  end
  return {0, n, 0}
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
local turn = 0
if is_turn(redis.call('ZSCORE', KEYS[1], ARGV[1]), rank) then
  turn = 1
end
return {rank + 1, n, turn}
