-- KEYS[1] waiters zset, KEYS[2] sequence, KEYS[3] alive zset
-- ARGV[1] ticket id. Removes the waiter; the last one out removes the
-- queue's keys, so that no key outlives its waiters.
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('ZCARD', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
end
return 1
