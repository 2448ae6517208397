// Package scripts runs redcoord's Lua scripts (the sources are in the
// public package scripts, one file per operation): typed Go wrappers that
// decode their replies in one place.
//
// Every script begins with a header naming its KEYS, ARGV and replies, and is
// run with lib.lua prepended. Scripts read time from TIME, touch keys only
// through KEYS, and take names only as KEYS and ARGV: nothing a user supplies
// is ever concatenated into Lua source.
package scripts

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
	lua "github.com/redcoord/redcoord/scripts"
)

// luaFiles are the sources, kept in the public package scripts.
var luaFiles = lua.FS

// Script is one operation: a Lua file with lib.lua prepended.
type Script struct {
	name string
	src  string
	*redis.Script
}

func load(name string) *Script { return loadWith(name) }

// loadWith loads name+".lua" with lib.lua, then libs (each unless ""),
// prepended.
func loadWith(name string, libs ...string) *Script {
	var src string
	files := append(append([]string{"lib.lua"}, libs...), name+".lua")
	for _, f := range files {
		if f == "" {
			continue
		}
		b, err := luaFiles.ReadFile(f)
		if err != nil {
			panic(err)
		}
		src += string(b) + "\n"
	}
	return &Script{name: name, src: src, Script: redis.NewScript(src)}
}

// Name returns the script's file name without ".lua".
func (s *Script) Name() string { return s.name }

// Run runs the script by its SHA1, loading it once on NOSCRIPT, and returns
// its reply or an error that says which script failed. A WRONGTYPE error
// from Redis or from the script's kind check matches errs.ErrWrongType.
func (s *Script) Run(ctx context.Context, rdb redis.Scripter, keys []string, args ...any) (any, error) {
	v, err := s.Script.Run(ctx, rdb, keys, args...).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	return v, nil
}

func (s *Script) wrap(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "WRONGTYPE"); i >= 0 {
		detail := strings.TrimSpace(strings.TrimPrefix(msg[i:], "WRONGTYPE"))
		if j := strings.Index(detail, " script:"); j >= 0 { // Redis 7 appends the script's location
			detail = detail[:j]
		}
		return fmt.Errorf("%w: %s", errs.ErrWrongType, detail)
	}
	return fmt.Errorf("redcoord: script %s: %w", s.name, err)
}

// ints decodes an array reply of integers, at least min long.
func ints(v any, min int) ([]int64, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < min {
		return nil, errUnexpected(v)
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		n, ok := x.(int64)
		if !ok {
			return nil, errUnexpected(v)
		}
		out[i] = n
	}
	return out, nil
}

// integer decodes an integer reply.
func integer(v any) (int64, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, errUnexpected(v)
	}
	return n, nil
}

func errUnexpected(v any) error {
	return fmt.Errorf("redcoord: unexpected script reply %v", v)
}

// SHA returns the SHA1 of the script in name+".lua" (as EVALSHA takes it),
// or "" when there is none: for operators (SCRIPT EXISTS) and for tests.
func SHA(name string) string {
	for _, list := range [][]*Script{lockScripts, fairScripts, rwScripts, semScripts, xsemScripts, {touch}} {
		for _, s := range list {
			if s.name == name {
				return s.Hash()
			}
		}
	}
	return ""
}
