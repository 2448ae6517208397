-- lock_leave: undo one acquire request if it was applied (its reply was lost
-- to a cancelled context or a failed connection); otherwise do nothing. In
-- both cases it leaves a marker by which a late copy of the request (one
-- that reaches Redis after this script) is refused.
-- KEYS[1] lock hash   KEYS[2] the Client's request markers (see lib.lua)
-- KEYS[3] the waiter registry (see lib.lua): unless ARGV[7] keeps it,
--         the request's Client leaves it; a free lock is handed a wake
--         (wake_one) when the leave frees it, or when the Client had been
--         woken and gives the wake up
-- ARGV[1..4] as in lib.lua
-- ARGV[5] owner   ARGV[6] request id
-- ARGV[7] "1": the Client keeps its registration, and a wake it got goes
--         to its other local waiters (it has some, or it never registered:
--         a MultiMutex); "0": its last local waiter leaves
-- Reply: 1 undone; 0 the request was not applied (or was already undone);
--        {1, msg} undone, freeing the lock, and the waiter to wake is
--        registered by the request's own Client: msg as in lock_release.
local owner, req = ARGV[5], ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r')
check_kind(KEYS[1], h[1], KIND)
local waiting = redis.call('ZCARD', KEYS[3])
mark_left(KEYS[2], req, MARK_TTL)
local keep = ARGV[7] == '1'
local removed = 0
if waiting > 0 and not keep then
  removed = redis.call('ZREM', KEYS[3], client_of(req))
  waiting = waiting - removed
end
if h[2] ~= owner or h[4] ~= req then
  if not h[2] and removed == 0 and not keep then
    -- The Client was not registered any more: a release may have woken
    -- it, and it gives up: the wake goes on to another registered waiter.
    wake_one(KEYS[3], waiting, PUBLISH, CHANNEL)
  end
  return 0
end
local c = tonumber(h[3]) - 1
if c > 0 then
  redis.call('HSET', KEYS[1], 'c', c, 'r', '')
  return 1
end
redis.call('DEL', KEYS[1])
local _, msg = wake_one(KEYS[3], waiting, PUBLISH, CHANNEL, req)
if msg then
  return {1, msg}
end
return 1
