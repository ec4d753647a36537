-- noop.lua is the benchmark's ceiling of a hot script (make bench): it reads
-- what a heartbeat must read first and changes nothing, for any number of
-- calls batched on the license, exactly as heartbeat.lua is run.
-- ARGV: one value per call. Returns {'OK', then 0 per call}.
local out = {'OK'}
redis.call('HGET', K_CONF, 'epoch')
for _ = 1, #ARGV do
  out[#out + 1] = 0
end
return out
