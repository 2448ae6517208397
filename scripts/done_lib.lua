-- done_lib.lua: request markers, for the semaphores, whose permits have no
-- owner hash to remember the last request in (see lib.lua's release
-- marker). A done zset (P:{N}:done) maps "<what>:<request id>" to the
-- server time (ms) after which the marker is dropped:
--   a:<req>  the acquire request req was applied (taken, or granted; for
--            a permit with a lease, req is the permit's id)
--   x:<req>  the acquire request req was given up: a late copy must not apply
--   r:<req>  the release request req was applied
--   s:<req>  the set request req (TrySetPermits, SetPermits, AddPermits)
--            was applied
-- A retry by go-redis, or a late copy, of a request finds its marker and is
-- not applied twice. Markers live MARK_TTL ms, longer than a command's
-- retries take; each costs about 100 bytes while it lives. A fair grant's
-- marker is how its waiter learns of it, so it lives as long as the
-- waiter's heartbeat, which keeps it until the waiter has looked.

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
