-- elect_lib.lua: the hooks of fair_lib.lua for the election (package
-- relection), prepended before it; the election's scripts are the fair
-- lock's (fair_*.lua) and elect_*.lua, run with lib.lua, queue_lib.lua,
-- this file and fair_lib.lua. An election is a fair lock of kind
-- "relection": the holder leads, its hold's token is its term, its holder
-- metadata is the value it proclaims, and candidates queue in order of
-- arrival. Each change of leader is logged, for observers.
--
-- Every election script takes the fair lock's KEYS[1..6] and
--   KEYS[7] the log: a stream of leader changes, oldest first, each entry
--           t  the term, a decimal string
--           v  the value the leader proclaimed
--           a  when the term began, server time in ms
-- A new term, a new value within a term (elect_proclaim), and the end of a
-- lead that no candidate follows (term 0) append one entry and publish "*"
-- on the name's channel (ARGV[3]), where observers wait; candidates wait on
-- their clients' channels, so they do not hear it.

-- LOG_KEEP is how many of the latest changes the log keeps at least (XADD
-- trims it by whole nodes, MAXLEN ~, so it may hold up to a node more):
-- an observer that falls further behind skips the oldest. LOG_TTL_MS keeps
-- a log without changes a day (25 hours), as the fence.
local LOG_KEEP, LOG_TTL_MS = 128, 90000000

-- check_more raises WRONGTYPE unless the log is absent or a stream; called
-- by check_keys, before a script's first write.
local function check_more()
  redis.call('XLEN', KEYS[7])
end

-- log_leader appends a change to the log and wakes the observers: the
-- leader of term token, since since (server ms), says value.
local function log_leader(token, value, since)
  redis.call('XADD', KEYS[7], 'MAXLEN', '~', LOG_KEEP, '*', 't', token, 'v', value, 'a', since)
  redis.call('PEXPIRE', KEYS[7], LOG_TTL_MS)
  notify(ARGV[2], ARGV[3], '*')
end

-- on_take is called by take when a candidate takes the lead: a new term.
local function on_take(token, meta, now)
  log_leader(token, meta, now)
end

-- on_vacant is called when a script ends the lead (a Resign, a grant given
-- back, a forced end) and no candidate follows: nobody leads, logged as
-- term 0. A lead whose lease ran out runs no script: it is not logged.
local function on_vacant()
  log_leader('0', '', now_ms())
end
