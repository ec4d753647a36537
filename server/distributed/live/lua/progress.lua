-- progress.lua marks the rebuild of a license that is under way (the
-- progress hash, KEYS[10], which rebuild.lua keeps up to date), so that
-- other instances wait for it instead of starting their own:
--   'claim': a rebuild of epoch ARGV[2] is about to read its snapshot
--     (called under the license's row lock, which orders the epochs); it
--     has not begun writing (no 'began'). Whether an earlier rebuild knew
--     Redis had lost the state ('lost') stays: that one may have taken the
--     settings away, and the next must not take their absence for a loss;
--   'abandon': the rebuild of epoch ARGV[2] gave up (a refused snapshot,
--     an error): its progress is made old at once, so that the next
--     rebuild need not wait for it to look dead.
-- KEYS: ../keys.go RebuildKeys. Returns 1 if it changed anything.
local op, epoch = ARGV[1], ARGV[2]
if op == 'claim' then
  redis.call('HSET', KEYS[10], 'epoch', epoch, 'touched', fmt(now_us()))
  redis.call('HDEL', KEYS[10], 'began')
  return 1
end
if redis.call('HGET', KEYS[10], 'epoch') == epoch then
  redis.call('HSET', KEYS[10], 'touched', '0')
  return 1
end
return 0
