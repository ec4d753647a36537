-- Prepended to join.lua, position.lua, aside.lua, leave.lua and length.lua
-- (redis.go): they first drop the waiters whose liveness ran out, by
-- Redis's clock.
-- KEYS[1] waiters zset, KEYS[3] alive zset, KEYS[4] aside zset.

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
    redis.call('ZREM', KEYS[4], m)
  end
end

-- is_turn reports whether the waiter of place (score) place at 0-based
-- rank may try for a seat: every waiter ahead of it stands aside (the
-- aside zset is scored by place too). O(log n).
local function is_turn(place, rank)
  return redis.call('ZCOUNT', KEYS[4], '-inf', '(' .. place) == rank
end
