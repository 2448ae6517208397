-- latch_lib.lua: helpers of the countdown latch's scripts, prepended after
-- lib.lua.
--
-- Every latch script takes the same KEYS and the same first five ARGV:
--   KEYS[1] latch: a hash with the fields
--             k  kind ("rlatch")
--             c  the count: how many CountDowns are left; -1 after Delete
--                (a tombstone, kept as long as request markers live, so
--                that the next round is above the deleted one)
--             g  the round: set by each TrySetCount that sets the count,
--                max(last + 1, the server's clock in microseconds), so that
--                a round is above every earlier one, also across a Delete
--             b  the round in which the hash was created: a waiter of an
--                earlier round knows its round opened (a round is set again
--                only at 0) unless the hash is younger than it
--             s  how long the latch lives once its count reaches 0 (ms),
--                from the handle that set the count
--           It has no TTL while its count is above 0; once the count
--           reaches 0 it expires s ms later, so that a spent latch does not
--           stay for ever (TrySetCount starts a new round before).
--   KEYS[2] done: request markers (see lib.lua): s:<req> a TrySetCount
--           that set the count, d:<req> a CountDown that counted
--   ARGV[1..4] as in lib.lua
--   ARGV[5] how long a latch at 0 lives (ms), for a count this call sets
local SPENT_TTL = ARGV[5]

-- latch_check_keys raises WRONGTYPE unless the latch hash is absent or of this
-- kind (kind_seen: its 'k' field) and the markers are absent or a zset,
-- so that a script fails before its first write.
local function latch_check_keys(kind_seen)
  check_kind(KEYS[1], kind_seen, KIND)
  redis.call('ZCARD', KEYS[2])
end
