-- fair_leave: after a wait that ended unacquired, undo what its request did:
-- leave the queue, or give back the hold it was granted or took (its reply
-- or grant message was not seen), handing the lock on to the next waiter.
-- KEYS, ARGV[1..5] as in fair_lib.lua
-- ARGV[6] request id
-- req is marked left in KEYS[6] (mark_left) in every case, so that a late
-- copy of the request is refused.
-- Like every script that finds the lock free, it hands it to the first live
-- waiter.
-- Reply: 1 something was undone; 0 the request had left no trace.
local owner, req = ARGV[5], ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r')
local queued = fair_check_keys(h[1], true)
fair_check_fence(queued)
mark_left(KEYS[6], req, MARK_TTL)
if h[2] == owner and h[4] == req then
  local c = tonumber(h[3]) - 1
  if c > 0 then -- the request re-entered
    redis.call('HSET', KEYS[1], 'c', c, 'r', '')
    return 1
  end
  fair_hand_on_or_vacate(queued)
  return 1
end
local left = 0
if redis.call('ZSCORE', KEYS[4], req) then
  fair_forget(req)
  left = 1
end
if not h[2] then -- its holder's lease ran out
  fair_hand_on(now_ms())
end
return left
