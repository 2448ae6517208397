-- elect_log: the changes of leader logged after a given entry.
-- KEYS[1] the log (see elect_lib.lua)
-- ARGV[1..5] as in fair_lib.lua
-- ARGV[6] the id of the last entry seen ('0-0': none)   ARGV[7] at most how many
-- Reply: {id, term, value, since (server ms)} for each entry after ARGV[6],
-- oldest first. Entries trimmed from the log (more than LOG_KEEP behind)
-- are not there.
local out = {}
local after = ARGV[6]
for _, e in ipairs(redis.call('XRANGE', KEYS[1], after, '+', 'COUNT', tonumber(ARGV[7]) + 1)) do
  if e[1] ~= after and #out < tonumber(ARGV[7]) then
    local f = {}
    for i = 1, #e[2], 2 do
      f[e[2][i]] = e[2][i + 1]
    end
    out[#out + 1] = {e[1], f.t or '0', f.v or '', f.a or '0'}
  end
end
return out
