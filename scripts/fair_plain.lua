-- fair_plain.lua: the hooks of fair_lib.lua for the fair lock, prepended
-- before it. The fair lock keeps nothing beside its hold and its queue, so
-- they do nothing.

-- check_more is called by check_keys, before a script's first write.
local function check_more() end

-- on_take is called by take when an owner takes a fresh hold.
local function on_take() end

-- on_vacant is called when a script frees the lock and nobody takes it.
local function on_vacant() end
