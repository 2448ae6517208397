// Package scripts holds redcoord's Lua scripts, one file per operation,
// for operators who want to read them or load them ahead of time. Each
// file begins with a header naming its KEYS, ARGV and replies. Each runs
// with lib.lua and its family's *_lib.lua files prepended: rw_*.lua with
// rw_lib.lua; fair_*.lua with queue_lib.lua and fair_lib.lua; sem_*.lua
// with done_lib.lua, queue_lib.lua and sem_lib.lua; xsem_*.lua with
// done_lib.lua and xsem_lib.lua. The library runs them itself: nothing here
// needs to be called.
package scripts

import "embed"

// FS holds the sources, *.lua.
//
//go:embed *.lua
var FS embed.FS
