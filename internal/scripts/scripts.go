// Package scripts runs redcoord's Lua scripts (the sources are in the
// public package scripts, one file per operation): typed Go wrappers that
// decode their replies in one place.
//
// Every script begins with a header naming its KEYS, ARGV and replies, and is
// run with the definitions it uses from lib.lua and its family's libraries
// prepended (see loadWith). Scripts read time from TIME, touch keys only
// through KEYS, and take names only as KEYS and ARGV: nothing a user supplies
// is ever concatenated into Lua source. Every primitive's script takes the
// same first ARGV (see lib.lua); each type here prepends them in one
// method, args. All lists every script as Redis runs it (go run
// ./scripts/dump writes them out).
package scripts

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
	lua "github.com/redcoord/redcoord/scripts"
)

// luaFiles are the sources, kept in the public package scripts.
var luaFiles = lua.FS

// Script is one operation: a Lua file with the definitions it uses from
// lib.lua and its family's libraries prepended (see loadWith).
type Script struct {
	name   string
	src    string
	shaArg any // the SHA1 as an EVALSHA argument, boxed once
	*redis.Script
}

func load(name string) *Script { return loadWith(name) }

// loadWith loads name+".lua" with the definitions it uses from lib.lua,
// then libs, prepended. A script runs its whole source on every call, and
// each definition costs the server time to build (a closure, a constant):
// the ones nothing calls are left out.
func loadWith(name string, libs ...string) *Script {
	body := read(name + ".lua")
	var defs []definition
	for _, f := range append([]string{"lib.lua"}, libs...) {
		defs = append(defs, definitions(f, read(f))...)
	}
	src := used(defs, body) + body
	rs := redis.NewScript(src)
	return &Script{name: name, src: src, shaArg: rs.Hash(), Script: rs}
}

func read(file string) string {
	b, err := luaFiles.ReadFile(file)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// A definition is one paragraph of a library file: its comment and a
// top-level local (a function or constants), with the names it defines.
type definition struct {
	names []string
	text  string
}

var definedNames = regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][A-Za-z0-9_, ]*)`)

// definitions splits a library file into its definitions, one per
// paragraph (lines up to a blank line). A paragraph of comments alone (the
// file's header, a note on what follows) is left out; a paragraph of code
// that defines nothing is a mistake in the file (a blank line inside a
// function), and panics.
func definitions(file, src string) []definition {
	var out []definition
	for _, para := range strings.Split(src, "\n\n") {
		var names []string
		for _, m := range definedNames.FindAllStringSubmatch(para, -1) {
			for _, n := range strings.Split(m[1], ",") {
				names = append(names, strings.Fields(n)[0])
			}
		}
		if len(names) == 0 {
			if commentOnly(para) {
				continue
			}
			panic(fmt.Sprintf("scripts: %s: a paragraph of code defines nothing:\n%s", file, para))
		}
		out = append(out, definition{names, para})
	}
	return out
}

// commentOnly reports whether every line of para is blank or a comment.
func commentOnly(para string) bool {
	for line := range strings.Lines(para) {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
			return false
		}
	}
	return true
}

// used returns, in their order, the definitions that body's code refers
// to, directly or through other definitions: a name in a comment is no use.
func used(defs []definition, body string) string {
	keep := make([]bool, len(defs))
	refs := []string{stripLua(body)}
	for len(refs) > 0 {
		code := refs[len(refs)-1]
		refs = refs[:len(refs)-1]
		for i, d := range defs {
			if !keep[i] && refersTo(code, d.names) {
				keep[i] = true
				refs = append(refs, stripLua(d.text))
			}
		}
	}
	var b strings.Builder
	for i, d := range defs {
		if keep[i] {
			b.WriteString(d.text)
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// refersTo reports whether text names any of names as a whole word.
func refersTo(text string, names []string) bool {
	for _, n := range names {
		for from := 0; ; {
			i := strings.Index(text[from:], n)
			if i < 0 {
				break
			}
			i += from
			end := i + len(n)
			if (i == 0 || !wordByte(text[i-1])) && (end == len(text) || !wordByte(text[end])) {
				return true
			}
			from = end
		}
	}
	return false
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Name returns the script's file name without ".lua".
func (s *Script) Name() string { return s.name }

// Source returns the script as Redis runs it: the definitions it uses,
// then its file.
func (s *Script) Source() string { return s.src }

// All returns every script, each once.
func All() []*Script {
	var all []*Script
	lists := [][]*Script{lockScripts, {lockMulti}, fairScripts, electScripts, rwScripts,
		semScripts, xsemScripts, latchScripts, rateScripts, {touch, cover, keyTypes, probe}}
	for _, list := range lists {
		all = append(all, list...)
	}
	return all
}

// Run runs the script by its SHA1, loading it on NOSCRIPT (see RunBySHA),
// and returns its reply or an error that says which operation failed (or
// both, for a WAIT shortfall: see decode). A WRONGTYPE error from Redis or
// from the script's kind check matches errs.ErrWrongType and names the key
// (see fail).
func (s *Script) Run(ctx context.Context, rdb redis.Scripter, keys []string, args ...any) (any, error) {
	v, err := RunBySHA(ctx, rdb, s.Script, keys, args...).Result()
	if err != nil {
		if errors.Is(err, errs.ErrNotReplicated) {
			return v, err
		}
		return nil, s.fail(ctx, rdb, keys, err)
	}
	return v, nil
}

// decode decodes with dec the reply v of a run that returned err. A
// script sent with WAIT (WithWaitReplicas) whose write too few replicas
// acknowledged fails with an error matching errs.ErrNotReplicated, and
// still has its reply: decode decodes it and returns that error beside
// it, for the caller to undo an acquire or report a release that stands.
// Any other error comes without a reply.
func decode[T any](v any, err error, dec func(any) (T, error)) (T, error) {
	if err != nil && !errors.Is(err, errs.ErrNotReplicated) {
		var zero T
		return zero, err
	}
	r, derr := dec(v)
	if derr != nil {
		return r, derr
	}
	return r, err
}

// wrap says which operation failed, by the script's file name without its
// family ("acquire" for lock_acquire.lua), so that an error reads
// "redcoord: acquire: <Redis's error>" and names no script: the script is
// an implementation detail, the operation is what the caller did.
func (s *Script) wrap(err error) error {
	if detail, ok := wrongType(err); ok {
		return &errs.Error{Sentinel: errs.ErrWrongType, Op: s.op(), Detail: detail}
	}
	return &errs.Error{Op: s.op(), Cause: err}
}

// op is the operation s performs, as wrap names it.
func (s *Script) op() string {
	if _, rest, ok := strings.Cut(s.name, "_"); ok {
		return rest
	}
	return s.name
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

// isOne decodes an integer reply that is 1 for yes.
func isOne(v any) (bool, error) {
	n, err := integer(v)
	return n == 1, err
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
	return &errs.Error{Detail: fmt.Sprintf("unexpected script reply %v", v)}
}

// SHA returns the SHA1 of the script in name+".lua" (as EVALSHA takes it),
// or "" when there is none: for operators (SCRIPT EXISTS) and for tests.
func SHA(name string) string {
	for _, s := range All() {
		if s.name == name {
			return s.Hash()
		}
	}
	return ""
}
