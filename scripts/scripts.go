// Package scripts holds redcoord's Lua scripts, one file per operation,
// for operators who want to read them. Each file begins with a header
// naming its KEYS, ARGV and replies; every primitive's ARGV begins the same
// way (lib.lua says how). Each runs with the definitions it uses (each a
// paragraph of its own) from lib.lua and its family's libraries prepended:
// rw_*.lua from rw_lib.lua; fair_*.lua and elect_proclaim.lua, for the fair
// lock and leader election alike, from queue_lib.lua, elect_lib.lua and
// fair_lib.lua; elect_leader.lua and elect_log.lua from lib.lua alone;
// sem_*.lua from queue_lib.lua and sem_lib.lua; xsem_*.lua from
// xsem_lib.lua; latch_*.lua from latch_lib.lua; rate_*.lua from rate_lib.lua. Each helper has one
// definition in the folder, a family's carrying its prefix (fair_keep). To
// read each script as Redis runs it, with its SHA1 (as SCRIPT EXISTS takes
// it) and size:
//
//	go run ./scripts/dump -out DIR
//
// The library runs them itself, loading each on first use: nothing here
// needs to be called.
package scripts

import "embed"

// FS holds the sources, *.lua.
//
//go:embed *.lua
var FS embed.FS
