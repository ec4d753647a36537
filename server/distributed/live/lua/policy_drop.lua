-- policy_drop.lua removes the site-policy index of a license (KEYS[2],
-- its marker KEYS[3]: ../keys.go Policy) if the license's settings
-- (KEYS[1]) say it has no policy, in the same step: a drop that lands
-- after the policy was switched on again (another instance) leaves the
-- new policy's index alone. While the settings say no policy nothing
-- reads the index, and a policy switched on again builds it for its new
-- generation (policy_index.lua; a build under way loses its marker here
-- and starts again). Returns 1 if it dropped the index, else 0.
local v = redis.call('HMGET', KEYS[1], 'epoch', 'policy')
if not v[1] or (v[2] or '') ~= '' then
  return 0
end
redis.call('UNLINK', KEYS[2], KEYS[3])
return 1
