-- sem_beat: the watchdog's renewal of a Client's registration for its
-- blocked unfair acquires (see sem_register in sem_lib.lua).
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] the registration: the Client's id
-- ARGV[6] how long the registration lives (ms)
-- Reply: 1 renewed; 0 gone (a release woke it, it lapsed, left, or took
--        permits for its last local waiter): its next try registers it
--        again.
-- The registration stands for every blocked acquire of the Client on the
-- name, and no wait names it: a late renewal finds nothing (the Client
-- left) or renews a Client that waits again, for one registration's life
-- at most. No permit changes either way (see lock_beat).
local deadline = redis.call('ZSCORE', KEYS[6], ARGV[5])
if not deadline or tonumber(deadline) <= now_ms() then
  return 0
end
register(KEYS[6], ARGV[5], tonumber(ARGV[6]))
outlive(KEYS[7], tonumber(ARGV[6]))
return 1
