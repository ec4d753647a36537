-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] alive zset
-- ARGV[1] ticket id, ARGV[2] liveness ms
-- Refreshes the ticket's liveness and returns {position, length}, after
-- dropping dead waiters; position 0 when the ticket is gone. O(log n):
-- ZRANK, not a walk of the queue.
local now = now_ms()
drop_dead(now)
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
if not rank then
  if n == 0 then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  end
  return {0, n}
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
return {rank + 1, n}
