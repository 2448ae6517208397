-- lib.lua: helpers prepended to every script of this package.
--
-- A lock hash (P:{N}:lock) has the fields
--   k  kind of primitive that owns the key ("rlock", "rfairlock", ...)
--   o  owner id          c  hold count       t  fencing token of this hold
--   r  id of the last request applied to this hold (retried requests are no-ops)
--   q  id of the acquire request that took the hold (see mark_released)
--   m  holder metadata (msgpack, opaque here)  a  acquired at, server time in ms
--   x  the id of the Extend request that gave the hold a fixed lease
--      (lock_extend), 0 before any: a renewal of the watchdog sent before
--      it, landing after, leaves it alone (see is_fixed, request_seen)
-- A fence hash (P:{N}:fence) has
--   n  the last token handed out, a decimal string (see next_token)
--   x  when its TTL was last refreshed, server time in microseconds; the
--      hash expires a day or more after the last token handed out
-- A Client's request markers (P:{N}:rel:<client>, a zset; see done_mark)
-- remember, for MarkerTTL, the requests of that Client's owners on the name
-- that released a hold to zero ("r:<request id>", so that a retry is
-- recognised), that gave up an acquire or took a hold since released to
-- zero ("x:<request id>", so that a late copy is refused), the holds
-- released to zero ("e:<token>", so that a late copy of a re-entry is
-- refused; see was_ended) and that forced the lock ("f:" or "g:<request
-- id>", see force_seen). One key per Client and name, whatever the number of
-- handles: one write in 16 or so drops the markers whose time has passed
-- (mark_request).
--
-- Each helper has one definition in this folder: a family's carry its
-- prefix (fair_keep in fair_lib.lua, sem_wake in sem_lib.lua), the shared
-- ones are here. A helper takes what it needs as arguments and returns what
-- its caller needs: no library keeps a value that a script changes.
--
-- The ARGV of every primitive's script (lock_, fair_, elect_, rw_, sem_,
-- xsem_ and latch_*.lua; touch.lua, no primitive's, takes only its own)
-- begins with the same four, what every family has a use for:
--   ARGV[1] kind: the primitive's ("rlock", "rsemaphore", ...), which
--           check_kind holds its keys to
--   ARGV[2] publish command: PUBLISH, or SPUBLISH on Cluster (see notify)
--   ARGV[3] channel: the name's (rrwlock: its readers'); a Client's is it
--           followed by ":<client id>" (see client_channel)
--   ARGV[4] how long request markers live (ms; see done_mark)
-- The locks' scripts (lock_, fair_, elect_, rw_) that act for one owner
-- take it as ARGV[5]. A family's other fixed arguments follow (its
-- library's header names them), then the operation's (the script's).
-- Run "go run ./scripts/dump -out DIR" to read each script as Redis runs
-- it.

-- The arguments every primitive's script begins with (see above).
local KIND, PUBLISH, CHANNEL, MARK_TTL = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])

-- MAX_COUNT is the largest count of permits a script keeps: 2^53 - 1, the
-- largest integer a Lua number holds exactly.
local MAX_COUNT = 9007199254740991

-- FENCE_TTL_MS is the TTL a fence hash is given when a token is handed out
-- from it, at most every FENCE_REFRESH_US: 25 hours, so that the fence
-- lives at least a day after its last token. Names used once (orders:42)
-- then leave no key behind; a token handed out after the fence expired is
-- still above every earlier one, because tokens are floored by the
-- server's clock (next_token).
local FENCE_TTL_MS = 90000000
local FENCE_REFRESH_US = 3600000000

-- server_time returns the server's clock as TIME gives it, read once per
-- script run.
local server_clock
local function server_time()
  if not server_clock then
    server_clock = redis.call('TIME')
  end
  return server_clock
end

-- now_ms returns the server's clock in milliseconds.
local function now_ms()
  local t = server_time()
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- next_token hands out the next fencing token of the fence hash at key:
-- max(last + 1, the server's clock in microseconds), stored in field n. The
-- clock floor keeps tokens increasing when the counter is lost or stale (a
-- restart without persistence, a failover to a replica that missed the last
-- token, an AOF fsync window, the fence's expiry), provided the server's
-- clock is not behind the old one by more than the outage; while the fence
-- exists a clock stepped back changes nothing, last + 1 wins. Tokens stay
-- below 2^53 (microseconds since 1970 are about 1.8e15), so Lua's numbers
-- hold them exactly. Field x is when the TTL was last refreshed.
--
-- It returns the token as a decimal string, for HSET and for messages:
-- Lua's '..' writes a number of 15 digits or more in exponent form, and so
-- may Redis (7.2 on) for a number passed to redis.call. A reply takes
-- tonumber(token). A fence hash of the wrong type raises WRONGTYPE before
-- anything is written.
local function next_token(key)
  local f = redis.call('HMGET', key, 'n', 'x')
  local last = tonumber(f[1] or '0')
  if not last or last >= MAX_COUNT then
    error('ERR fence ' .. key .. ' holds no token below 2^53')
  end
  local t = server_time()
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = string.format('%.0f', math.max(last + 1, us))
  local refreshed = tonumber(f[2] or '0') or 0
  if us - refreshed >= FENCE_REFRESH_US or us < refreshed then
    redis.call('HSET', key, 'n', token, 'x', string.format('%.0f', us))
    redis.call('PEXPIRE', key, FENCE_TTL_MS)
  else
    redis.call('HSET', key, 'n', token)
  end
  return token
end

-- fence_moved reports whether the fence hash at key changed since a
-- ForceUnlock read upto, its last token then (a decimal string, "0" for
-- none), before sending its force: every hold taken since moved it on (a
-- Forget or a lost fence moved it back), and a force is about the holds
-- its caller saw.
local function fence_moved(key, upto)
  return (redis.call('HGET', key, 'n') or '0') ~= upto
end

-- is_named reports whether a request that names a hold of owner (named:
-- its token; an rrwlock read hold's name, see rw_lib.lua) is about the hold
-- Redis has: that of seen_owner, named seen_name (false for either when
-- absent). Every request that changes a hold names it: a hold of the owner
-- with another name is a later one (or an orphan), and a copy of a request
-- sent for an earlier hold that arrives late (a go-redis retry; the
-- watchdog, the Hub and the caller each have their own connection) must
-- change nothing in it.
local function is_named(seen_owner, seen_name, owner, named)
  return seen_owner == owner and seen_name == named
end

-- check_kind raises WRONGTYPE unless key is absent or a hash written by a
-- primitive of this kind; kind_seen is the key's 'k' field (false if none).
local function check_kind(key, kind_seen, kind)
  if kind_seen == kind then return end
  if kind_seen then
    error('WRONGTYPE ' .. key .. ' holds ' .. kind_seen .. ' data, not ' .. kind)
  end
  if redis.call('EXISTS', key) == 1 then
    error('WRONGTYPE ' .. key .. ' holds data redcoord did not write')
  end
end

-- read_hash returns the fields ... of a primitive's hash key (a lock hash,
-- rrwlock's readers), the first of them 'k', having checked its kind (see
-- check_kind). An absent key, the common case of an acquire, reads as
-- {kind}: no hold, and a kind that the checks accept. HLEN tells it apart (0) in one call, and raises
-- WRONGTYPE for a key of another type, where HMGET then EXISTS take two.
local function read_hash(key, kind, ...)
  if redis.call('HLEN', key) == 0 then
    return {kind}
  end
  local h = redis.call('HMGET', key, ...)
  check_kind(key, h[1], kind)
  return h
end

-- remaining returns a held key's remaining lease in ms, at least 1: a
-- waiter's hint, where 0 (PTTL rounds down) would read as "unknown" and
-- cost a whole poll interval instead of a millisecond.
local function remaining(key)
  return math.max(1, redis.call('PTTL', key))
end

-- outlive makes key live at least ms more from now; a key without a TTL
-- gets one, an absent key stays absent.
local function outlive(key, ms)
  local pttl = redis.call('PTTL', key)
  if pttl == -1 or (pttl >= 0 and pttl < ms) then
    redis.call('PEXPIRE', key, ms)
  end
end

-- notify publishes msg on channel with cmd (PUBLISH, or SPUBLISH on
-- Cluster). It is a hint: a refused command (an ACL) must not fail a script
-- that has written. A server without sharded pub/sub (before 7.0) refuses
-- SPUBLISH, and its subscribers fall back to SUBSCRIBE: PUBLISH reaches them.
local function notify(cmd, channel, msg)
  local r = redis.pcall(cmd, channel, msg)
  if cmd == 'SPUBLISH' and type(r) == 'table' and r.err then
    redis.pcall('PUBLISH', channel, msg)
  end
end

-- tell_forced tells the Client of owner that a forced unlock ended its
-- holds of part ('l' the lock hash, 'r' a read hold) whose tokens are up
-- to token (a decimal string): "!<part> <owner> <token>" on notice
-- followed by the owner's client id (owner is "<client>:<handle>"). The
-- Client marks those holds lost on hearing it (see internal/core,
-- Notices); a hold it took since has a greater token. A hint (see notify).
local function tell_forced(cmd, notice, part, owner, token)
  notify(cmd, notice .. string.match(owner, '^([^:]*)'), '!' .. part .. ' ' .. owner .. ' ' .. token)
end

-- A waiter registry (a zset: member -> heartbeat deadline, server time in
-- ms) lists the blocked acquires of an unfair primitive (rlock's
-- P:{N}:waiters, rrwlock's writers, the semaphores'), so that a release
-- wakes one of them, or as many as it can serve, each in its own process,
-- instead of every process that waits on the name. A member is a request
-- id, "<client>:<handle>:<seq>" (the expirable semaphore's adds " <ttl>"),
-- or, in rlock's and the counting semaphore's registries, where a Client
-- registers once per name and queues its own waiters, the client id
-- alone; its client's channel is the name's channel followed by
-- ":<client>", in the name's slot. wake_one and wake_all below serve the
-- locks; the semaphores wake from their own (sem_lib.lua, xsem_lib.lua).

-- client_channel returns the channel of the client that sent request req.
local function client_channel(channel, req)
  return channel .. ':' .. string.match(req, '^([^:]*)')
end

-- client_of returns the client id that request req starts with: the
-- member by which its Client is registered in rlock's registry.
local function client_of(req)
  return string.match(req, '^([^:]*)')
end

-- register records request req in the registry key as waiting, for ms more.
local function register(key, req, ms)
  local t = server_time()
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', key, now + ms, req)
  outlive(key, ms)
end

-- unregister removes request req from the registry key, if it is there.
-- waiting is the registry's size, read before the script's first write
-- (its type checked then): an empty registry costs no write.
local function unregister(key, req, waiting)
  if waiting > 0 then
    redis.call('ZREM', key, req)
  end
end

-- fresh_floor returns the deadline from which a registration of the
-- registry key is fresh at now: the middle of the time from now to the
-- latest deadline (see wake_one); nil when the registry is empty.
local function fresh_floor(key, now)
  local latest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if not latest then
    return nil
  end
  return math.floor((now + tonumber(latest)) / 2)
end

-- registry_taken settles the waiter registry key for the request req,
-- whose Client (client_of) holds the lock, by its mode (lock_acquire's ARGV[10]):
-- 'k' keeps the Client registered for its other local waiters; 'r' and
-- 'u' unregister it; any other mode leaves the registry be. ms is how long
-- a registration lives; waiting is as unregister's.
local function registry_taken(key, mode, req, ms, waiting)
  if mode == 'k' then
    register(key, client_of(req), ms)
  elseif (mode == 'r' or mode == 'u') and waiting > 0 then
    unregister(key, client_of(req), waiting)
  end
end

-- wake_one wakes one registered request, after dropping the dead ones
-- (past their deadline): a message on its client's channel, which only
-- that process hears: targeted at the request ("@<req> ", see
-- internal/hub), or, for a registered Client (a client id), "1", which
-- wakes the Client's longest-waiting local waiter.
-- It wakes the fresh registration whose deadline comes first, a fresh one
-- being one whose deadline is in the later half of the time from now to
-- the latest deadline. A live registration's deadline is its last renewal
-- plus the Client's lease TTL, and the watchdog renews it every TTL/3: the
-- latest deadline is at most now + TTL, every live one's at least now +
-- 2*TTL/3 (a tick late: 1/3 TTL of slack), so every live registration is
-- fresh. A registration its process no longer renews (the process died)
-- leaves the later half TTL/2 to 2*TTL/3 after its last renewal, and is
-- woken after every live one: a release spends its one wake on a process
-- that can take the lock. (When only such registrations are left, the
-- earliest in the later half is woken. Clients with different TTLs on one
-- name blur the halves: a wake may then go to a dead process first, which
-- costs a poll at most.) The woken request leaves the
-- registry: it registers again if its next try fails, and a dead process
-- is woken once at most. waiting is the registry's size, read before the
-- script's first write (its type checked then). It reports whether it
-- woke one.
--
-- by, if given, is the request the script runs for. A registration of its
-- Client (client_of, read only when a registration is woken) is not
-- published to: the
-- message is returned too (true, msg), for the script to put in its reply,
-- and the Client delivers it to its own waiters as if it had arrived (a
-- release whose next waiter is in the releasing process hands on without
-- a message).
local function wake_one(key, waiting, cmd, channel, by)
  if waiting == 0 then
    return false
  end
  local now = now_ms()
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local fresh = fresh_floor(key, now)
  if not fresh then
    return false
  end
  local first = redis.call('ZRANGEBYSCORE', key, fresh, '+inf', 'LIMIT', 0, 1)[1]
  redis.call('ZREM', key, first)
  local msg = '1'
  if string.find(first, ':', 1, true) then
    msg = '@' .. first .. ' '
  end
  if by and client_of(first) == client_of(by) then
    return true, msg
  end
  notify(cmd, client_channel(channel, first), msg) -- a hint (see notify)
  return true
end

-- tell_clients wakes every waiter ('*') of the clients that sent the
-- requests in members (request ids, or registry members that start with
-- one), once per client: told holds the client channels told already.
local function tell_clients(members, cmd, channel, told)
  for _, req in ipairs(members) do
    local ch = client_channel(channel, req)
    if not told[ch] then
      told[ch] = true
      notify(cmd, ch, '*')
    end
  end
end

-- wake_all wakes every registered request's process (a forced unlock:
-- anyone may take the lock), once per process; the registrations stay.
-- waiting is as for wake_one.
local function wake_all(key, waiting, cmd, channel)
  if waiting == 0 then
    return
  end
  tell_clients(redis.call('ZRANGE', key, 0, -1), cmd, channel, {})
end

-- Request markers: a zset maps "<what>:<request id>" to the server time
-- (ms) after which the marker is dropped. The locks keep one per Client and
-- name (P:{N}:rel:<client>, see above); the semaphores and the latch, whose
-- permits have no owner hash to remember the last request in, one per name
-- (P:{N}:done):
--   a:<req>  the acquire request req was applied (taken, or granted; for
--            a permit with a lease, req is the permit's id)
--   x:<req>  the acquire request req was given up, or took a hold that was
--            released to zero since: a late copy must not apply
--   e:<tok>  the hold of token tok was released to zero: a late copy of a
--            re-entry naming it must not apply
--   b:<req>  the counting semaphore's TryAcquire req found the permits
--            taken: a copy replies so again, and takes nothing
--   r:<req>  the release request req was applied
--   s:<req>  the set request req (TrySetPermits, SetPermits, AddPermits)
--            was applied
-- A retry by go-redis, or a late copy, of a request finds its marker and is
-- not applied twice. Markers live longer than a command's retries take;
-- each costs about 100 bytes while it lives. A fair grant's marker is how
-- its waiter learns of it, so it lives as long as the waiter's heartbeat,
-- which keeps it until the waiter has looked.

-- done_purge drops the markers whose time has passed.
local function done_purge(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
end

-- done_has reports whether the marker what:req is there.
local function done_has(key, what, req)
  return redis.call('ZSCORE', key, what .. ':' .. req) ~= false
end

-- done_mark sets the marker what:req for ttl ms; the zset expires with its
-- last marker.
local function done_mark(key, what, req, now, ttl)
  redis.call('ZADD', key, now + ttl, what .. ':' .. req)
  outlive(key, ttl)
end

-- done_unmark removes the marker what:req.
local function done_unmark(key, what, req)
  redis.call('ZREM', key, what .. ':' .. req)
end

-- mark_request sets a lock's request marker what:req (see above) for ttl
-- ms. One write in 16 or so (the server clock's microseconds a multiple of
-- 16) first drops the markers whose time has passed: a marker kept past
-- its time is harmless (a request id is never reused, and the key expires
-- with its last marker), and the drop is a command of its own on every
-- release to zero otherwise. Every marker of a Client's key lives ttl
-- (MarkerTTL, one value for every script), so the one set now lives
-- longest: the key is made to expire with it, without reading its TTL
-- first (done_mark's outlive).
local function mark_request(key, what, req, ttl, also, also2)
  local now = now_ms()
  if tonumber(server_time()[2]) % 16 == 0 then
    done_purge(key, now)
  end
  local at = now + ttl
  if also2 then -- more markers (whole members), in the same ZADD
    redis.call('ZADD', key, at, what .. ':' .. req, at, also, at, also2)
  elseif also then
    redis.call('ZADD', key, at, what .. ':' .. req, at, also)
  else
    redis.call('ZADD', key, at, what .. ':' .. req)
  end
  redis.call('PEXPIRE', key, ttl)
end

-- mark_left records in the Client's request markers that request req was
-- left (its acquire gave up), so that a copy of req arriving later is
-- refused.
local function mark_left(key, req, ttl)
  mark_request(key, 'x', req, ttl)
end

-- was_left reports whether request req was left (see mark_left).
local function was_left(key, req)
  return done_has(key, 'x', req)
end

-- mark_released records in the Client's request markers that request req
-- released its owner's hold to zero, so that a retry of it, which finds
-- the hold gone, replies as the first run did; and, in the same ZADD, that
-- the hold is over: taken, the request that took it (a lock hash's q, a
-- read hold's name), as left (see was_left), and token, the hold's, as
-- ended (see was_ended), so that a late copy of its acquire or of one of
-- its re-entries, landing while the name is free or another's, takes
-- nothing. taken is false for a hold taken before q was kept; token is
-- nil for a read hold (rw_runlock), whose re-entries name no token, so
-- that a late copy of a read re-entry is not refused.
local function mark_released(key, req, ttl, taken, token)
  local x = taken and taken ~= '' and 'x:' .. taken or nil
  local e = token and 'e:' .. token or nil
  if not x then
    x, e = e, nil
  end
  mark_request(key, 'r', req, ttl, x, e)
end

-- was_ended reports whether a request naming the hold of token held ('0':
-- none) names one its owner released to zero (see mark_released): a live
-- re-entry is sent in its handle's turn, before the release that ends its
-- hold, so such a request is a late copy.
local function was_ended(key, held)
  return held ~= '0' and done_has(key, 'e', held)
end

-- force_seen returns the reply of force request req when it ran before
-- (a go-redis retry, a late copy), or nil: a copy replies as the first run
-- did and changes nothing, whatever holds now.
local function force_seen(key, req)
  if done_has(key, 'f', req) then return 1 end
  if done_has(key, 'g', req) then return 0 end
  return nil
end

-- force_done records that force request req ran and what it replied (1
-- it ended holds, 0 it found none; see force_seen), and returns the reply.
local function force_done(key, req, reply, ttl)
  mark_request(key, reply == 1 and 'f' or 'g', req, ttl)
  return reply
end

-- was_released reports whether request req released a hold to zero (see
-- mark_released).
local function was_released(key, req)
  return done_has(key, 'r', req)
end

-- numbered_below reports whether request id req is numbered below request
-- id last of the same owner: "<owner>:<seq>" (see internal/hold), seq a
-- decimal without leading zeros, so that the shorter id, or of two as long
-- the lesser string, has the lesser number. An empty last ('' once a leave
-- undid a re-entry) is below every id.
local function numbered_below(req, last)
  return #req < #last or (#req == #last and req < last)
end

-- is_stale reports whether the request req of owner reaches a hold of
-- seen_owner's whose last applied request is last after that one: a copy
-- of an acquire or a re-entry numbered below the hold's last request (see
-- numbered_below), which the handle has done with. It changes nothing: a
-- late copy of the acquire that took the owner's earlier hold would take
-- over the owner's fresh hold as an orphan, one of a re-entry would count
-- a hold nobody releases. A handle numbers a re-entry in the turn it sends
-- it in (Base.Renumber), and a fresh acquire finds no hold of its owner
-- but an orphan, numbered before it.
local function is_stale(seen_owner, owner, req, last)
  return seen_owner == owner and last and numbered_below(req, last)
end

-- is_fixed reports whether mark, a hold's fixed-lease mark (a lock hash's
-- x, an rrwlock read hold's 'x:'<owner>, an expirable permit's 'f:'<id>),
-- says that Extend gave the hold a fixed lease: the mark is then the id
-- of that Extend request; '0', '' or absent (false) is none. A renewal of
-- the watchdog leaves a fixed lease alone: it was sent before the Extend
-- and arrives after it.
local function is_fixed(mark)
  return mark and mark ~= '0' and mark ~= ''
end

-- request_seen reports whether request req of a hold (an Extend, a
-- Proclaim) was applied already, or is numbered below one of its kind
-- that was (see numbered_below): mark is the id of the last one applied,
-- which the hold keeps ('0', '' or false: none; see is_fixed). Such a
-- request is a retry, or a late copy of one the handle has done with, and
-- changes nothing: a late Extend would set the lease again from now, past
-- the end a later Extend set; a late Proclaim would say an older value. A
-- handle numbers its requests of a hold in its turn, so in the order it
-- sends them; the requests of different owners (an expirable permit
-- extended by a handle that did not take it) are not ordered, and each is
-- applied.
local function request_seen(mark, req)
  return is_fixed(mark) and string.match(mark, '^(.*):') == string.match(req, '^(.*):')
    and not numbered_below(mark, req)
end

-- release_hold is how every lock's release (lock_release, fair_release,
-- rw_unlock, rw_runlock) by request req starts: it drops one hold of the
-- hash key (all of them if all is "1"), whose fields cf and rf (c and r of
-- a lock hash when nil) are count and last;
-- mine says whether the hold is the one the release names: its owner's,
-- with the token the handle released (its current hold's, or the one it
-- lost). It returns the script's reply when the release ends here: 0, the
-- hold is gone and req released it to zero before (a retry, recognised by
-- the Client's request markers marks: see mark_released); -1, not held;
-- the count, when req was applied already (a retry) or is stale (below);
-- the count left after one hold of several. It returns nil when the last
-- hold goes, having written nothing: the script then checks the keys it
-- will write, marks req released (mark_released), deletes the hash and
-- wakes whoever waits.
--
-- A copy of a release that reaches Redis late (go-redis sent it again
-- after the first try failed, and the first arrives after all) must not
-- drop a hold taken since. A hold of another token is not the one it
-- names: a copy of a release to zero finds its marker and replies 0 as a
-- retry would, whatever hold the owner has taken since. Within one hold
-- (re-entries), a handle sends the requests that write r one at a time, in
-- its turn, and numbers them in that order (a re-entry takes its number in
-- the turn it is sent in): a request numbered below the hold's last one
-- is a stale copy of one the handle has done with, never the request its
-- caller waits for, and changes nothing.
local function release_hold(key, marks, req, all, mine, count, last, cf, rf)
  if not mine then
    if was_released(marks, req) then
      return 0
    end
    return -1
  end
  if last == req then
    return tonumber(count)
  end
  if last and numbered_below(req, last) then
    return tonumber(count)
  end
  local c = tonumber(count) - 1
  if c > 0 and all ~= '1' then
    redis.call('HSET', key, cf or 'c', c, rf or 'r', req)
    return c
  end
  return nil
end
