-- elect_lib.lua: the election's log (package relection), prepended after
-- lib.lua and queue_lib.lua, before fair_lib.lua. An election is a fair
-- lock of kind "relection" run by the fair lock's scripts (fair_*.lua,
-- with elect_proclaim.lua its own): the holder leads, its hold's token is
-- its term, its holder metadata is the value it proclaims, and candidates
-- queue in order of arrival. Each change of leader is logged, for
-- observers. The lock hash also keeps p, the id of the last Proclaim
-- applied (elect_proclaim; a Proclaim of an earlier term is another
-- owner's, or numbered below this term's).
--
-- Every election script takes the fair lock's KEYS[1..6] and
--   KEYS[7] the log: a stream of leader changes, oldest first, each entry
--           t  the term, a decimal string
--           v  the value the leader proclaimed
--           a  when the term began, server time in ms
-- A new term, a new value within a term (elect_proclaim), and the end of a
-- lead that no candidate follows (term 0) append one entry and publish "*"
-- on the name's channel (ARGV[3]), where observers wait; candidates wait on
-- their clients' channels, so they do not hear it. The fair lock's calls
-- of its scripts pass no KEYS[7]: they log nothing.

-- ELECT_LOG is the log's key; nil in a fair lock's call, which has none.
local ELECT_LOG = KEYS[7]

-- LOG_KEEP is how many of the latest changes the log keeps at least (XADD
-- trims it by whole nodes, MAXLEN ~, so it may hold up to a node more):
-- an observer that falls further behind skips the oldest. LOG_TTL_MS keeps
-- a log without changes a day (25 hours), as the fence.
local LOG_KEEP, LOG_TTL_MS = 128, 90000000

-- elect_log_leader appends a change to the log and wakes the observers:
-- the leader of term token, since since (server ms), says value.
local function elect_log_leader(token, value, since)
  redis.call('XADD', ELECT_LOG, 'MAXLEN', '~', LOG_KEEP, '*', 't', token, 'v', value, 'a', since)
  redis.call('PEXPIRE', ELECT_LOG, LOG_TTL_MS)
  notify(PUBLISH, CHANNEL, '*')
end
