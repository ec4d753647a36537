-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] alive zset, KEYS[4] aside zset
-- ARGV[1] ticket id, ARGV[2] '1' to stand aside, '0' to stand back
-- Marks the waiter (after dropping the dead ones). Returns {found, next}:
-- found 0 when the ticket is gone; next the ticket of the waiter right
-- behind it when it stands aside on its turn (its turn now), '' otherwise.
-- O(log n).
drop_dead(now_ms())
local place = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not place then
  return {0, ''}
end
if ARGV[2] ~= '1' then
  redis.call('ZREM', KEYS[4], ARGV[1])
  return {1, ''}
end
redis.call('ZADD', KEYS[4], place, ARGV[1])
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
if not is_turn(place, rank) then
  return {1, ''}
end
return {1, redis.call('ZRANGE', KEYS[1], rank + 1, rank + 1)[1] or ''}
