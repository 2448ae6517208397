package scripts

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Call is a script with its keys and the arguments that stay the same from
// one call to the next (an owner, a kind, a channel), boxed once, so that a
// call allocates only for the values it adds. A handle prepares its calls
// once, when it is made. Prepare boxes a call's own keys and arguments;
// calls made On one Boxed share them (an RW's acquires and releases do).
type Call struct {
	s     *Script
	keys  []any // strings
	fixed []any
}

// constArgs holds each string constArg was given, boxed once.
var constArgs sync.Map

// constArg returns s as a script argument, boxed once for the process: for
// the few strings every handle sends the same (a primitive's kind, the
// publish command), so that a handle's prepared arguments do not each box
// their own copy.
func constArg(s string) any {
	if v, ok := constArgs.Load(s); ok {
		return v
	}
	v, _ := constArgs.LoadOrStore(s, any(s))
	return v
}

// Boxed is keys and fixed leading arguments, each boxed once as a script
// argument, for any number of Calls to share (On).
type Boxed struct{ keys, fixed []any }

// Box boxes keys and fixed (see Boxed).
func Box(keys []string, fixed ...any) Boxed {
	n, m := len(keys), len(keys)+len(fixed)
	v := make([]any, n, m)
	for i, k := range keys {
		v[i] = k
	}
	v = append(v, fixed...)
	return Boxed{keys: v[:n:n], fixed: v[n:m:m]}
}

// Prepare returns the Call of s on keys with the fixed leading arguments.
func (s *Script) Prepare(keys []string, fixed ...any) Call { return s.On(Box(keys, fixed...)) }

// On returns the Call of s on b's keys and fixed arguments, which it shares.
func (s *Script) On(b Boxed) Call { return Call{s: s, keys: b.keys, fixed: b.fixed} }

// stringKeys returns the call's keys as strings.
func (c Call) stringKeys() []string {
	keys := make([]string, len(c.keys))
	for i, k := range c.keys {
		keys[i] = k.(string)
	}
	return keys
}

// processor is what a Call is sent with: a go-redis client. The Scripter
// that WithWaitReplicas makes, which sends each script in a pipeline with
// WAIT, is not one: a Call goes through its EvalSha instead.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Run runs the call with more arguments after the fixed ones, by the
// script's SHA1, loading it on NOSCRIPT, and returns the reply or an error
// as Script.Run does.
func (c Call) Run(ctx context.Context, rdb redis.Scripter, more ...any) (any, error) {
	p, ok := rdb.(processor)
	if !ok {
		args := append(append([]any(nil), c.fixed...), more...)
		return c.s.Run(ctx, rdb, c.stringKeys(), args...)
	}
	v := make([]any, 3+len(c.keys)+len(c.fixed)+len(more))
	v[0], v[1], v[2] = "evalsha", c.s.shaArg, len(c.keys)
	n := 3 + copy(v[3:], c.keys)
	n += copy(v[n:], c.fixed)
	copy(v[n:], more)
	cmd := redis.NewCmd(ctx, v...)
	_ = p.Process(ctx, cmd)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		// A copy: the failed EVALSHA keeps its arguments, for hooks that
		// kept them. EVAL loads the script into the cache.
		ev := append([]any{"eval", c.s.src}, v[2:]...)
		cmd = redis.NewCmd(ctx, ev...)
		_ = p.Process(ctx, cmd)
	}
	r, err := cmd.Result()
	if err != nil {
		return nil, c.s.fail(ctx, rdb, c.stringKeys(), err)
	}
	return r, nil
}
