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
--           a zset: "<request id> <n> <ttl>" -> heartbeat deadline
--           (server time, ms); n is what the request asks for, ttl how
--           long (ms) each renewal keeps it, its Client's lease TTL
--   KEYS[7] sizes: the same members as waiters, each scored by its n, so
--           that a release reads only the waiters that fit
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
  redis.call('ZCARD', KEYS[7])
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

-- An unfair waiter's registration is fresh while its last renewal is at
-- most half its TTL old: the watchdog renews it every TTL/3, and the other
-- sixth is slack for the tick's round trip. A dead process's
-- registrations stop being fresh half a TTL after its last tick, and
-- lapse at their deadline, a TTL after it. deadline is the registration's
-- score, ttl the last field of its member.
local function sem_fresh(deadline, ttl, now)
  return deadline - now > ttl / 2
end

-- sem_register records the registration m, for n permits (a decimal
-- string, as sent), as waiting for ms more.
local function sem_register(m, n, ms)
  register(KEYS[6], m, ms)
  redis.call('ZADD', KEYS[7], n, m)
  outlive(KEYS[7], ms)
end

-- sem_unregister removes the registration m and reports whether it was
-- there.
local function sem_unregister(m)
  redis.call('ZREM', KEYS[7], m)
  return redis.call('ZREM', KEYS[6], m) == 1
end

-- sem_drop_dead drops the registrations whose deadline has passed.
local function sem_drop_dead(now)
  local dead = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now)
  for _, m in ipairs(dead) do
    redis.call('ZREM', KEYS[7], m)
  end
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
  end
end

-- SEM_SCAN_BATCH is how many registrations sem_wake reads per call.
local SEM_SCAN_BATCH = 64

-- sem_wake wakes registered unfair waiters whose requests fit in avail,
-- unless a live fair waiter still has the first claim on it (queued). It
-- wakes at most budget permits' worth (what the caller freed: permits
-- freed earlier already woke someone, who is on the way), but always one
-- that fits, so that a request larger than budget is not stranded.
--
-- Whom: the fresh registrations (sem_fresh) first, and only with what is
-- left the stale ones, the longest unrenewed first, so that a dead
-- process's registrations do not take live waiters' wakes, and a live
-- waiter whose renewals are late is still woken when no fresh one fits.
-- It reads the SEM_SCAN_BATCH registered longest ago first (the registry's
-- order); if permits are left and the registry holds more, it reads on in
-- the sizes key, smallest request first, only the requests that fit, so
-- that no number of larger requests hides one that fits. Its cost, O(log)
-- each, is one read of the registry, the registrations it wakes, the
-- stale ones it passes over (a process that stopped renewing: they lapse
-- within a TTL) and the dead ones it drops, once each.
--
-- Each woken waiter gets one message, targeted at its request on its
-- client's channel ("@<req> "), which only its process hears, and leaves
-- the registry: it registers again if its next try fails. registered is
-- the registry's size (sem_check_keys): 0 wakes nobody.
local function sem_wake(avail, queued, budget, registered)
  if avail <= 0 or budget <= 0 or queued or registered == 0 then
    return
  end
  local now = now_ms()
  sem_drop_dead(now)
  local woken, stale, seen, gone = {}, {}, {}, {}
  -- consider wakes the registration m, for n permits, if it is fresh and
  -- fits, and keeps it for later if it is stale and fits
  local function consider(m, n, deadline)
    seen[m] = true
    local ttl = tonumber(string.match(m, ' (%d+)$'))
    if n > avail then
      return
    elseif ttl and sem_fresh(deadline, ttl, now) then
      if n <= budget or #woken == 0 then
        avail, budget = avail - n, budget - n
        woken[#woken + 1] = m
      end
    else
      stale[#stale + 1] = {deadline, m, n}
    end
  end
  local ms = redis.call('ZRANGE', KEYS[6], 0, SEM_SCAN_BATCH - 1, 'WITHSCORES')
  for i = 1, #ms, 2 do
    if avail <= 0 or budget <= 0 then
      break
    end
    consider(ms[i], tonumber(string.match(ms[i], ' (%d+) %d+$')) or math.huge, tonumber(ms[i + 1]))
  end
  local rank = #ms < 2 * SEM_SCAN_BATCH and -1 or 0 -- -1: the registry was read whole
  while rank >= 0 and avail > 0 and budget > 0 do
    local batch = redis.call('ZRANGE', KEYS[7], rank, rank + SEM_SCAN_BATCH - 1, 'WITHSCORES')
    rank = #batch < 2 * SEM_SCAN_BATCH and -1 or rank + SEM_SCAN_BATCH
    for i = 1, #batch, 2 do
      local m, n = batch[i], tonumber(batch[i + 1])
      if n > avail or budget <= 0 then
        rank = -1 -- sorted by n: nothing after it fits
        break
      end
      if not seen[m] then
        local deadline = tonumber(redis.call('ZSCORE', KEYS[6], m))
        if deadline then
          consider(m, n, deadline)
        else
          gone[#gone + 1] = m
        end
      end
    end
  end
  table.sort(stale, function(a, b) return a[1] < b[1] end)
  for _, s in ipairs(stale) do
    if avail <= 0 or budget <= 0 then
      break
    end
    if s[3] <= avail and (s[3] <= budget or #woken == 0) then
      avail, budget = avail - s[3], budget - s[3]
      woken[#woken + 1] = s[2]
    end
  end
  for _, m in ipairs(gone) do
    redis.call('ZREM', KEYS[7], m)
  end
  for _, m in ipairs(woken) do
    sem_unregister(m)
    local req = string.match(m, '^(%S+)')
    notify(PUBLISH, client_channel(CHANNEL, req), '@' .. req .. ' ')
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
