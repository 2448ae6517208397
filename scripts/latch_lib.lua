-- latch_lib.lua: helpers of the countdown latch's scripts, prepended after
-- lib.lua and done_lib.lua.
--
-- Every latch script takes the same KEYS and the same first five ARGV:
--   KEYS[1] latch: a hash with the fields
--             k  kind ("rlatch")
--             c  the count: how many CountDowns are left
--           It has no TTL while its count is above 0; once the count
--           reaches 0 it expires SPENT_TTL ms later, so that a spent latch
--           does not stay for ever (TrySetCount starts it again before).
--   KEYS[2] done: request markers (done_lib.lua): s:<req> a TrySetCount
--           that set the count, d:<req> a CountDown that counted
--   ARGV[1] kind   ARGV[2] publish command   ARGV[3] channel
--   ARGV[4] how long request markers live (ms)
--   ARGV[5] SPENT_TTL: how long a latch at 0 lives (ms)
local KIND, PUBLISH, CHANNEL, MARK_TTL = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local SPENT_TTL = tonumber(ARGV[5])

-- check_keys raises WRONGTYPE unless the latch hash is absent or of this
-- kind (kind_seen: its 'k' field) and the markers are absent or a zset,
-- so that a script fails before its first write.
local function check_keys(kind_seen)
  check_kind(KEYS[1], kind_seen, KIND)
  redis.call('ZCARD', KEYS[2])
end
