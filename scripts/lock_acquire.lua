-- lock_acquire: take a lock hash for an owner, or re-enter it.
-- KEYS[1] lock hash   KEYS[2] fence hash
-- KEYS[3] the Client's request markers (see lib.lua)
-- KEYS[4] the waiter registry (see lib.lua)
-- ARGV[1..4] as in lib.lua
-- ARGV[5] owner   ARGV[6] request id   ARGV[7] lease (ms)
-- ARGV[8] holder metadata   ARGV[9] token of the hold the handle has ('0': none)
-- ARGV[10] the registry, where the request's Client is registered by its
--         client id (see client_of): '0' leave it be; 'r' register the
--         Client if the lock is busy, unregister it if the request takes
--         the lock (its last local waiter); 'k' register the Client
--         whether or not the request takes the lock (other local waiters
--         remain); 'u' unregister the Client even if the lock is busy
--         (its waits poll: they could not hear a wake)
-- ARGV[11] how long a registration lives without a heartbeat (ms)
-- Reply: {1, token, count}  held: a fresh hold, a re-entry, or this request
--                           was already applied (a retry after a lost reply)
--        {0, pttl}          held by another owner for pttl more ms, or this
--                           request was left (or took a hold released to
--                           zero since), is numbered below the hold's
--                           last, or names a hold released to zero since
--                           (a late copy: refused; is_stale, was_ended)
-- Unless its mode is '0' or 'k', a request that holds the lock takes its
-- Client out of the registry: an earlier try may have registered it, or
-- this very run did before a reply that was lost (go-redis then sends it
-- again), and a release must not spend its wake on a holder. The owner re-enters only the hold the
-- handle knows (its token). A hold of the owner with another token is an
-- orphan (an acquire applied whose reply and undo were both lost): it is
-- taken over as a fresh hold, so that the handle's one Unlock frees it.
-- Writes happen only after every check, so an error leaves the keys
-- unchanged.
local owner, req = ARGV[5], ARGV[6]
local h = read_hash(KEYS[1], KIND, 'k', 'o', 'c', 't', 'r')
local mode = ARGV[10]
local waiting = redis.call('ZCARD', KEYS[4]) -- its type, before any write
-- taken settles the registry for a request that holds the lock.
local function taken()
  registry_taken(KEYS[4], mode, req, tonumber(ARGV[11]), waiting)
end
if h[2] and h[2] ~= owner then
  if (mode == 'r' or mode == 'k') and not was_left(KEYS[3], req) then
    register(KEYS[4], client_of(req), tonumber(ARGV[11]))
  elseif mode == 'u' then
    unregister(KEYS[4], client_of(req), waiting)
  end
  return {0, remaining(KEYS[1])}
end
if h[2] and h[5] == req then
  taken()
  return {1, tonumber(h[4]), tonumber(h[3])}
end
if was_left(KEYS[3], req) or is_stale(h[2], owner, req, h[5])
  or (h[4] ~= ARGV[9] and was_ended(KEYS[3], ARGV[9])) then
  return {0, h[2] and remaining(KEYS[1]) or 1}
end
if h[2] and h[4] == ARGV[9] then
  local c = redis.call('HINCRBY', KEYS[1], 'c', 1)
  redis.call('HSET', KEYS[1], 'r', req)
  taken()
  return {1, tonumber(h[4]), c}
end
local token = next_token(KEYS[2])
redis.call('HSET', KEYS[1], 'k', KIND, 'o', owner, 'c', 1, 'x', 0, 't', token,
  'r', req, 'q', req, 'm', ARGV[8], 'a', now_ms())
redis.call('PEXPIRE', KEYS[1], ARGV[7])
taken()
return {1, tonumber(token), 1}
