-- sem_lib.lua: helpers of the counting semaphore's scripts, prepended after
-- lib.lua and queue_lib.lua.
--
-- Every semaphore script takes the same KEYS and the same first four ARGV:
--   KEYS[1] permits: a hash with the fields
--             k  kind ("rsemaphore")
--             a  available permits; below 0 while SetPermits has shrunk
--                the total under what is held
--             t  total permits: what was set, plus what was added
--           It has no TTL: it is the semaphore's configuration.
--   KEYS[2] queue: a list of fair waiters' request ids, oldest first
--   KEYS[3] alive: a zset, request id -> heartbeat deadline (server time, ms)
--   KEYS[4] waiting: a hash, request id -> permits it asks for
--   KEYS[5] done: request markers (see lib.lua)
--   KEYS[6] waiters: the registry of blocked unfair acquires (see lib.lua),
--           a zset: "<request id> <n>" -> heartbeat deadline (server
--           time, ms); n is what the request asks for
--   ARGV[1..4] as in lib.lua
-- The queue, alive and waiting keys always hold the same request ids. While
-- the queue has a live waiter, permits go to it first: a release grants
-- them to the live heads that fit, in order, inside the same script, and
-- nobody else may take permits (so a large request is not starved by a
-- stream of small ones).

-- sem_check_keys raises WRONGTYPE unless the permits hash is absent or of this
-- kind (kind_seen: its 'k' field) and the other keys are absent or of their
-- types, so that a script fails before its first write. It returns the
-- fair queue's length and the registry's size, as they were then.
local function sem_check_keys(kind_seen)
  check_kind(KEYS[1], kind_seen, KIND)
  local queue_length = redis.call('LLEN', KEYS[2])
  redis.call('ZCARD', KEYS[3])
  redis.call('HLEN', KEYS[4])
  redis.call('ZCARD', KEYS[5])
  return queue_length, redis.call('ZCARD', KEYS[6])
end

-- sem_forget removes a request from the queue (queue_lib.lua).
local function sem_forget(req)
  queue_forget(KEYS[2], KEYS[3], KEYS[4], req)
end

-- sem_live_head returns the first live request, popping the dead ones
-- before it.
local function sem_live_head(now)
  return queue_head(KEYS[2], KEYS[3], KEYS[4], now)
end

-- sem_serve grants permits to the live heads of the queue, in order, while the
-- head's request fits in avail, and tells each grantee alone, on its
-- client's channel ("@<req> granted", see client_channel in lib.lua and To
-- in internal/hub). A head asking for more than the total (it shrank) is
-- dropped: its next attempt reports the error. serve returns what is left,
-- and whether a live waiter remains queued (who then has the first claim on
-- it).
local function sem_serve(now, avail)
  local total = tonumber(redis.call('HGET', KEYS[1], 't')) or 0
  while true do
    local req = sem_live_head(now)
    if not req then
      return avail, false
    end
    local n = tonumber(redis.call('HGET', KEYS[4], req))
    if n > total then
      sem_forget(req)
    elseif n > avail then
      return avail, true
    else
      avail = avail - n
      -- the marker is the grant: it must last until the waiter looks, which
      -- its heartbeat promises within its deadline (then sem_heartbeat keeps it)
      local deadline = tonumber(redis.call('ZSCORE', KEYS[3], req))
      sem_forget(req)
      done_mark(KEYS[5], 'a', req, now, math.max(MARK_TTL, deadline - now))
      notify(PUBLISH, client_channel(CHANNEL, req), '@' .. req .. ' granted')
    end
  end
end

-- WAKE_SCAN bounds how many registrations one wake looks at.
local WAKE_SCAN = 128

-- sem_wake wakes registered unfair waiters whose requests fit in avail,
-- longest registered first, skipping those too large for what is left,
-- unless a live fair waiter still has the first claim on it (queued). It
-- wakes at most budget permits' worth (what the caller freed: permits
-- freed earlier already woke someone, who is on the way), but always the
-- first that fits, so that a request larger than budget is not stranded.
-- Each gets one message, targeted at its request on its client's channel
-- ("@<req> "), which only its process hears, and leaves the registry: it
-- registers again if its next try fails. Registrations past their
-- deadline (a dead process) are dropped first. registered is the
-- registry's size (sem_check_keys): 0 wakes nobody.
local function sem_wake(avail, queued, budget, registered)
  if avail <= 0 or budget <= 0 or queued or registered == 0 then
    return
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now_ms())
  local woken = false
  for _, m in ipairs(redis.call('ZRANGE', KEYS[6], 0, WAKE_SCAN - 1)) do
    local req, n = string.match(m, '^(%S+) (%d+)$')
    n = tonumber(n)
    if n and n <= avail and (n <= budget or not woken) then
      avail, budget, woken = avail - n, budget - n, true
      redis.call('ZREM', KEYS[6], m)
      notify(PUBLISH, client_channel(CHANNEL, req), '@' .. req .. ' ')
      if avail <= 0 or budget <= 0 then
        return
      end
    end
  end
end

-- sem_settle stores avail after serving the queue, and wakes the registered
-- waiters who fit in what is left, freed permits' worth of them (see
-- sem_wake); all that is left, when the queue had held it back until now.
-- queue_length and registered are what sem_check_keys returned.
local function sem_settle(now, avail, freed, queue_length, registered)
  local queued
  avail, queued = sem_serve(now, avail)
  redis.call('HSET', KEYS[1], 'a', avail)
  if queue_length > 0 and not queued then
    freed = avail
  end
  sem_wake(avail, queued, freed, registered)
  return avail
end

-- sem_keep makes the queue's keys outlive the latest heartbeat deadline, ms
-- from now, so that a queue of waiters that all died disappears by itself.
local function sem_keep(ms)
  queue_keep(KEYS[2], KEYS[3], KEYS[4], ms)
end
