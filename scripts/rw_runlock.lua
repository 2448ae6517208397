-- rw_runlock: drop one read hold; the last reader's release wakes a writer.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] request id
-- ARGV[8] "1": drop every hold of the owner at once (see lock_release)
-- ARGV[9] the name of the read hold the handle releases (see rw_lib.lua):
--         its current one, or the one it lost
-- Reply: the owner's remaining read holds (0: released); -1 not held (or
--        the owner's read hold is another one: see release_hold).
local registered = rw_check_keys()
local owner, req = ARGV[5], ARGV[7]
registered = rw_purge(now_ms(), registered)
local c, mine = rw_read_held(owner, ARGV[9])
local last = redis.call('HGET', KEYS[3], 'r:' .. owner)
local reply = release_hold(KEYS[3], KEYS[6], req, ARGV[8], mine, c, last, owner, 'r:' .. owner)
if reply then
  return reply
end
mark_released(KEYS[6], req, MARK_TTL, ARGV[9])
rw_drop_reader(owner, registered)
return 0
