-- sem_beat: the watchdog's renewal of a Client's registration for its
-- blocked unfair acquires (see sem_register in sem_lib.lua).
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] the registration: the Client's id
-- ARGV[6] how long the registration lives (ms)
-- Reply: 1 renewed; 0 gone (a release woke it, it lapsed, left, or took
--        permits for its last local waiter): its next try registers it
--        again.
local deadline = redis.call('ZSCORE', KEYS[6], ARGV[5])
if not deadline or tonumber(deadline) <= now_ms() then
  return 0
end
register(KEYS[6], ARGV[5], tonumber(ARGV[6]))
outlive(KEYS[7], tonumber(ARGV[6]))
return 1
