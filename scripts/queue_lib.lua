-- queue_lib.lua: a FIFO of waiting requests, for the fair lock and the fair
-- semaphore, kept in three keys that always hold the same request ids:
--   q  a list of request ids, oldest first
--   a  a zset, request id -> heartbeat deadline (server time, ms)
--   w  a hash, request id -> what a grant to the request needs; and
--      '@' .. request id -> when it joined the queue (server time, ms).
--      A request without the second field was queued by a version that
--      kept no time; a version that reads only the first finds it as it
--      was (request ids begin with a client id, in hex, never with '@').
-- A request whose heartbeat deadline has passed is dead: its waiter is
-- gone, and the next look at the head drops it.

-- queue_join adds a request at the tail, joining at now with need (what a
-- grant to it needs). The caller adds its heartbeat deadline to a.
local function queue_join(q, w, req, now, need)
  redis.call('RPUSH', q, req)
  redis.call('HSET', w, req, need, '@' .. req, now)
end

-- queue_forget removes a request from the queue.
local function queue_forget(q, a, w, req)
  redis.call('LREM', q, 1, req)
  redis.call('ZREM', a, req)
  redis.call('HDEL', w, req, '@' .. req)
end

-- queue_head returns the first request whose heartbeat deadline is still
-- ahead, popping the dead ones before it; nil when there is none.
local function queue_head(q, a, w, now)
  while true do
    local req = redis.call('LINDEX', q, 0)
    if not req then
      return nil
    end
    local deadline = redis.call('ZSCORE', a, req)
    if deadline and tonumber(deadline) > now then
      return req
    end
    redis.call('LPOP', q)
    redis.call('ZREM', a, req)
    redis.call('HDEL', w, req, '@' .. req)
  end
end

-- queue_pop removes the first request whose heartbeat deadline is still
-- ahead and returns it with what a grant to it needs (nil if it has no
-- entry there), popping the dead ones before it; nil when there is none.
-- It is queue_head followed by queue_forget, a command fewer: for a
-- caller that takes the head whatever it finds.
local function queue_pop(q, a, w, now)
  while true do
    local req = redis.call('LPOP', q)
    if not req then
      return nil
    end
    local deadline = redis.call('ZSCORE', a, req)
    redis.call('ZREM', a, req)
    if deadline and tonumber(deadline) > now then
      local entry = redis.call('HGET', w, req)
      redis.call('HDEL', w, req, '@' .. req)
      return req, entry
    end
    redis.call('HDEL', w, req, '@' .. req)
  end
end

-- queue_keep makes the queue's keys outlive the latest heartbeat deadline,
-- ms from now, so that a queue of waiters that all died disappears by itself.
local function queue_keep(q, a, w, ms)
  outlive(q, ms)
  outlive(a, ms)
  outlive(w, ms)
end
