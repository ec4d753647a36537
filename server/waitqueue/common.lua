-- Prepended to join.lua, position.lua, leave.lua and length.lua
-- (redis.go): they first drop the waiters whose liveness ran out, by
-- Redis's clock.
-- KEYS[1] waiters zset, KEYS[3] alive zset.

-- now_ms is Redis's time in milliseconds (one clock for every instance).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- drop_dead removes the waiters whose liveness ran out by now: O(log n)
-- each, once.
local function drop_dead(now)
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
    redis.call('ZREM', KEYS[1], m)
    redis.call('ZREM', KEYS[3], m)
  end
end
