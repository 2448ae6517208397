// Package scripts holds redcoord's Lua scripts, one file per operation,
// for operators who want to read them. Each file begins with a header
// naming its KEYS, ARGV and replies. Each runs with the definitions it uses
// (each a paragraph of its own) from lib.lua and its family's libraries
// prepended: rw_*.lua from rw_lib.lua; fair_*.lua from queue_lib.lua,
// fair_plain.lua and fair_lib.lua, and again, for leader election, with
// elect_lib.lua in place of fair_plain.lua (elect_proclaim.lua too);
// elect_leader.lua and elect_log.lua from lib.lua alone; sem_*.lua from
// queue_lib.lua and sem_lib.lua; xsem_*.lua from xsem_lib.lua; latch_*.lua
// from latch_lib.lua; rate_*.lua from rate_lib.lua. The library runs them
// itself, loading each on first use: nothing here needs to be called.
package scripts

import "embed"

// FS holds the sources, *.lua.
//
//go:embed *.lua
var FS embed.FS
