-- tombstone.lua marks a deleted license: its live state is dropped and the
-- settings say "deleted" with an epoch no rebuild can beat, so that a
-- rebuild racing the delete cannot bring the license back.
-- ARGV: 1 version, 2 tenant.
redis.call('DEL', K_CONF, K_LEASES, K_DL, K_DEDUPE, K_IDEM, K_EXP, K_ENDED, K_BOR)
redis.call('HSET', K_CONF, 'epoch', '9007199254740991', 'deleted', '1', 'version', ARGV[1],
  'tenant', ARGV[2])
return 'OK'
