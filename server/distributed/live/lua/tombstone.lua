-- tombstone.lua marks a deleted license: its live state is dropped (a
-- rebuild under way with it: the last call finds the settings deleted and
-- switches nothing in) and the settings say "deleted" with an epoch no
-- rebuild can beat, so that a rebuild racing the delete cannot bring the
-- license back. Large keys are freed in the background (UNLINK).
-- KEYS: ../keys.go RebuildKeys. ARGV: 1 version, 2 tenant, 3 '1' when the
-- pool is the license's own ('' a grant's).
-- The policy index of the license (the last two KEYS: index, marker) goes
-- only with the license's own pool: a grant's tombstone leaves it alone,
-- since it holds the members of live leases of the other grants, some of
-- which the record may not hold yet (granted, not yet inserted); the
-- members of the gone pool are removed as they are met and by the prune.
redis.call('DEL', K_CONF)
redis.call('UNLINK', K_LEASES, K_DL, K_DEDUPE, K_IDEM, K_EXP, K_ENDED, K_BOR)
redis.call('UNLINK', unpack(KEYS, 10, #KEYS - 2))
if ARGV[3] == '1' then
  redis.call('UNLINK', KEYS[#KEYS - 1], KEYS[#KEYS])
end
redis.call('HSET', K_CONF, 'epoch', '9007199254740991', 'deleted', '1', 'version', ARGV[1],
  'tenant', ARGV[2])
return 'OK'
