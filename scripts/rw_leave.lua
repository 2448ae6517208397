-- rw_leave: after a wait that ended unacquired, undo its acquire request if
-- it was applied (its reply lost), and stop waiting as a writer.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] request id   ARGV[8] "r" or "w"
-- ARGV[9] a writer's "1": its Client keeps its registration, and a wake it
--         got goes to its other local waiters (it has some, or it never
--         registered); "0": its last local waiter leaves
-- req is marked left in KEYS[6] (mark_left) in every case, so that a late
-- copy of the request is refused.
-- Reply: 1 a hold was undone; 0 the request was not applied; {1 or 0, msg}
--        the same, and the writer it woke is the request's own Client's:
--        msg as in lock_release.
-- A last local writer whose Client a release woke (it is no longer in the
-- wake registry) passes the wake on to the next registered Client, when
-- the lock is still free.
local registered = rw_check_keys()
local owner, req = ARGV[5], ARGV[7]
mark_left(KEYS[6], req, MARK_TTL)
if ARGV[8] == 'w' then
  local own, msg = client_of(req), nil
  -- with returns the reply n, with the message for own's Client if any.
  local function with(n)
    if msg then
      return {n, msg}
    end
    return n
  end
  rw_drop_writer(owner)
  if ARGV[9] ~= '1' then
    local removed = 0
    if registered > 0 then
      removed = redis.call('ZREM', KEYS[7], own)
      registered = registered - removed
    end
    if removed == 0 and redis.call('EXISTS', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[4]) == 0 then
      -- own's registration is gone: the wake goes to another Client
      registered = rw_wake_writer(registered)
    end
  end
  local h = redis.call('HMGET', KEYS[1], 'o', 'c', 'r')
  if h[1] ~= owner or h[3] ~= req then
    return with(0)
  end
  local c = tonumber(h[2]) - 1
  if c > 0 then
    redis.call('HSET', KEYS[1], 'c', c, 'r', '')
    return with(1)
  end
  redis.call('DEL', KEYS[1])
  msg = rw_write_released(nil, registered, req)
  return with(1)
end
if redis.call('HGET', KEYS[3], 'r:' .. owner) ~= req then
  return 0
end
local c = tonumber(redis.call('HGET', KEYS[3], owner)) - 1
if c > 0 then
  redis.call('HSET', KEYS[3], owner, c, 'r:' .. owner, '')
  return 1
end
rw_drop_reader(owner, registered)
return 1
