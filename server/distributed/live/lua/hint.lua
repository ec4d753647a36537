-- hint.lua lowers the expiry hint of a license to a deadline (ZADD LT) and
-- bumps the license's hint generation, so that a concurrent repair
-- (fixhint.lua) that did not see this deadline gives up.
-- This script does not use common.lua's keys: it works on the global hint
--   KEYS[1] zset license id -> time at or before its earliest deadline
--   KEYS[2] hash license id -> hint generation
-- both hash-tagged {expiry}, one slot.
-- ARGV: 1 license id, 2 deadline (unix microseconds); further pairs for
-- more licenses (the cleaner lowers many hints in one call).
for i = 1, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], 'LT', ARGV[i + 1], ARGV[i])
  redis.call('HINCRBY', KEYS[2], ARGV[i], 1)
end
return 1
