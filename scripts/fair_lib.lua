-- fair_lib.lua: helpers of the fair lock's scripts, prepended after lib.lua,
-- queue_lib.lua and elect_lib.lua. The election (package relection) runs
-- the same scripts: a fair lock whose holder leads and whose changes of
-- holder are logged in KEYS[7], which only its calls pass (elect_lib.lua).
--
-- Every fair script takes the same KEYS and the same first five ARGV:
--   KEYS[1] lock hash (fields as in lib.lua; kind "rfairlock")
--   KEYS[2] fence hash
--   KEYS[3] queue: a list of waiting request ids "<owner>:<seq>", oldest first
--   KEYS[4] alive: a zset, request id -> heartbeat deadline (server time, ms)
--   KEYS[5] waiting: a hash, request id -> "<lease ms> <holder metadata>",
--           what a grant to that request needs, and when it joined (see
--           queue_lib.lua)
--   KEYS[6] the caller's Client's request markers (see lib.lua)
--   ARGV[1..4] as in lib.lua   ARGV[5] the owner acting (a fair_force's:
--           the caller's, who need not hold)
-- The queue, alive and waiting keys always hold the same request ids: every
-- script adds or removes an id in all three at once.

-- fair_check_keys raises WRONGTYPE unless the lock hash is absent or of this
-- kind (kind_seen: its 'k' field) and the queue's keys are absent or of
-- their types (an election's log too), so that a script fails before its
-- first write. It returns the queue's length. The alive and waiting keys
-- are checked only when someone is queued or always is true (the script
-- may queue): an empty queue's keys are otherwise left untouched.
local function fair_check_keys(kind_seen, always)
  check_kind(KEYS[1], kind_seen, KIND)
  if ELECT_LOG then
    redis.call('XLEN', ELECT_LOG)
  end
  local queued = redis.call('LLEN', KEYS[3])
  if always or queued > 0 then
    redis.call('ZCARD', KEYS[4])
    redis.call('HLEN', KEYS[5])
  end
  return queued
end

-- fair_check_fence raises WRONGTYPE unless the fence is absent or a hash. A
-- script that may hand the lock on or take it calls it before its first
-- write when anyone is queued (queued: the queue's length): with nobody
-- queued, next_token's first call, a read, is the script's first touch of
-- the fence and checks it.
local function fair_check_fence(queued)
  if queued > 0 then
    redis.call('HEXISTS', KEYS[2], 'n')
  end
end

-- fair_owner_of returns the owner part of a request id.
local function fair_owner_of(req)
  return string.match(req, '^(.*):%d+$')
end

-- fair_forget removes a request from the queue (queue_lib.lua).
local function fair_forget(req)
  queue_forget(KEYS[3], KEYS[4], KEYS[5], req)
end

-- fair_live_head returns the first live request, popping the dead ones
-- before it.
local function fair_live_head(now)
  return queue_head(KEYS[3], KEYS[4], KEYS[5], now)
end

-- fair_take makes req's owner the holder: a fresh hold with the next token,
-- which it returns as a decimal string (see next_token in lib.lua). In an
-- election it is a new term, logged.
local function fair_take(req, lease, meta, now)
  local token = next_token(KEYS[2])
  redis.call('HSET', KEYS[1], 'k', KIND, 'o', fair_owner_of(req), 'c', 1, 'x', 0, 't', token,
    'r', req, 'q', req, 'm', meta, 'a', now)
  redis.call('PEXPIRE', KEYS[1], lease)
  if ELECT_LOG then
    elect_log_leader(token, meta, now)
  end
  return token
end

-- fair_hand_on grants the free lock to the first live waiter, if any, and
-- publishes the grant to it alone, on its client's channel (see
-- client_channel in lib.lua), which only its process hears: "@<req>
-- <token> <now>" (see To in internal/hub; now is the server's clock in ms,
-- from which the grantee dates its lease). It reports whether it granted.
-- A retried acquire with the same request id then finds r == req. The
-- grant writes every field of the lock hash (fair_take): a hash that a
-- release or a force left in place is replaced whole, as if deleted first.
local function fair_hand_on(now)
  while true do
    local req, w = queue_pop(KEYS[3], KEYS[4], KEYS[5], now)
    if not req then
      return false
    end
    local sp = w and string.find(w, ' ', 1, true)
    if sp then
      local token = fair_take(req, string.sub(w, 1, sp - 1), string.sub(w, sp + 1), now)
      notify(PUBLISH, client_channel(CHANNEL, req), '@' .. req .. ' ' .. token .. ' ' .. now)
      return true
    end
  end
end

-- fair_hand_on_or_vacate ends the hold that this script frees (its holder
-- released it, or gave back a grant, or it was forced): it hands the lock
-- to the first live waiter, whose grant replaces the lock hash (see
-- fair_hand_on), or else deletes the hash. It reads the clock only when
-- someone is queued, or in an election, which logs that nobody leads (term
-- 0) when no candidate follows. A lead whose lease ran out runs no script:
-- it is not logged.
local function fair_hand_on_or_vacate(queued)
  if queued > 0 and fair_hand_on(now_ms()) then
    return
  end
  redis.call('DEL', KEYS[1])
  if ELECT_LOG then
    elect_log_leader('0', '', now_ms())
  end
end

-- fair_keep makes the queue's keys outlive the latest heartbeat deadline, ms
-- from now, so that the queue of waiters that all died disappears by itself.
local function fair_keep(ms)
  queue_keep(KEYS[3], KEYS[4], KEYS[5], ms)
end
