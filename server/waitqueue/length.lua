-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] alive zset, KEYS[4] aside zset
-- Returns how many waiters are alive, after dropping the dead ones (as
-- position.lua does); removes the keys of an empty queue.
drop_dead(now_ms())
local n = redis.call('ZCARD', KEYS[1])
if n == 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
end
return n
