-- probe: which of the commands that the library's scripts call the server
-- refuses inside a script, each called with redis.pcall: for the server
-- check of a Client, and to name the command in the error of a script
-- that a refusal failed. It leaves nothing behind: the stream XADD makes
-- is deleted at once, and the channel is the check's own.
-- KEYS[1] the check's stream key (P:{N}:probe); with ARGV[1] '', a key of
--         the script that failed, which only routes the call
-- ARGV[1] the publish command (PUBLISH, or SPUBLISH on Cluster); '' to
--         call TIME alone
-- ARGV[2] the check's channel (P:{N}:probe-ch), in the key's slot
-- Reply: the error of TIME, of the publish command and of XADD, in that
--        order: '' for a call that worked or was not made
local function probe_call(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    return r.err
  end
  return ''
end

local replies = {probe_call('TIME'), '', ''}
if ARGV[1] ~= '' then
  replies[2] = probe_call(ARGV[1], ARGV[2], 'probe')
  replies[3] = probe_call('XADD', KEYS[1], 'MAXLEN', 0, '*', 'p', 1)
  if replies[3] == '' then
    redis.call('DEL', KEYS[1])
  end
end
return replies
