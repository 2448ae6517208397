-- lock_beat: the watchdog's renewal of a blocked acquire's registration.
-- KEYS[1] the waiter registry (see lib.lua)
-- ARGV[1..4] as in lib.lua (of the primitive whose registry it is)
-- ARGV[5] the registration: a request id (a semaphore's: "<request id> <n>";
--         rlock's: a client id)
-- ARGV[6] how long the registration lives (ms)
-- Reply: 1 renewed; 0 gone (a release woke it, it lapsed, left, or took
--        the lock): its next try registers it again.
-- A registration by request id names its wait. One by client id stands for
-- every blocked acquire of the Client on the name, and no wait names it:
-- a renewal sent for an earlier registration that arrives after the
-- Client registered again renews a registration of a Client that waits,
-- for one registration's life at most, and one that arrives after it left
-- finds nothing. Either way no hold changes, and a wake spent on a Client
-- that no longer waits costs a poll.
local deadline = redis.call('ZSCORE', KEYS[1], ARGV[5])
if not deadline or tonumber(deadline) <= now_ms() then
  return 0
end
register(KEYS[1], ARGV[5], tonumber(ARGV[6]))
return 1
