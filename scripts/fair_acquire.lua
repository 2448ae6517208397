-- fair_acquire: one attempt to take a fair lock, or re-enter it; a blocking
-- attempt that fails joins the queue (once) and refreshes its heartbeat.
-- KEYS, ARGV[1..5] as in fair_lib.lua
-- ARGV[6] request id   ARGV[7] lease (ms)   ARGV[8] holder metadata
-- ARGV[9] "1": queue if not acquired (Lock); "0": never queue (TryLock)
-- ARGV[10] heartbeat (ms): how long the queue entry lives without renewal
-- ARGV[11] token of the hold the handle has ('0': none)
-- Reply: {1, token, count, age}  held: a fresh hold, a re-entry, or this
--                      request was already applied or granted (a retry, or a
--                      grant whose message was lost); age: ms since the hold
--                      was taken (0 for a fresh one)
--        {0, pttl, now}  held by another owner for pttl more ms; now: the
--                        server's clock in ms
-- A free lock goes to this request only if no live waiter is ahead of it;
-- a free lock with a live waiter ahead (its holder's lease ran out) is
-- granted to that waiter. The owner re-enters only the hold the handle knows
-- (its token); a hold of the owner with another token is an orphan (see
-- lock_acquire) and is taken over as a fresh hold. A request that was left
-- (or took a hold released to zero since), is numbered below the owner's
-- hold's last, or names a hold released to zero since (a late copy;
-- is_stale, was_ended), is refused: {0, pttl, now}. Writes happen only after every check, so an
-- error leaves the keys unchanged.
local owner, req = ARGV[5], ARGV[6]
local h = read_hash(KEYS[1], KIND, 'k', 'o', 'c', 't', 'r', 'a')
local queued = fair_check_keys(h[1])
fair_check_fence(queued)
local now = now_ms()
if h[2] == owner and h[5] == req then
  return {1, tonumber(h[4]), tonumber(h[3]), now - tonumber(h[6])}
end
if was_left(KEYS[6], req) or is_stale(h[2], owner, req, h[5])
  or (h[4] ~= ARGV[11] and was_ended(KEYS[6], ARGV[11])) then
  return {0, h[2] and remaining(KEYS[1]) or 1, now}
end
if h[2] == owner then
  if queued > 0 and redis.call('ZSCORE', KEYS[4], req) then
    fair_forget(req) -- a re-entry does not queue
  end
  if h[4] ~= ARGV[11] then
    return {1, tonumber(fair_take(req, ARGV[7], ARGV[8], now)), 1, 0}
  end
  local c = redis.call('HINCRBY', KEYS[1], 'c', 1)
  redis.call('HSET', KEYS[1], 'r', req)
  return {1, tonumber(h[4]), c, now - tonumber(h[6])}
end
local head = queued > 0 and fair_live_head(now)
if not h[2] then
  if not head or head == req then
    if head then
      fair_forget(req)
    end
    return {1, tonumber(fair_take(req, ARGV[7], ARGV[8], now)), 1, 0}
  end
  fair_hand_on(now)
end
if ARGV[9] == '1' then
  if not redis.call('ZSCORE', KEYS[4], req) then
    if queued == 0 then
      redis.call('HLEN', KEYS[5]) -- its type (see fair_check_keys), before the first write
    end
    queue_join(KEYS[3], KEYS[5], req, now, ARGV[7] .. ' ' .. ARGV[8])
  end
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[10]), req)
  fair_keep(tonumber(ARGV[10]))
end
return {0, remaining(KEYS[1]), now}
