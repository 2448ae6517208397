package scripts

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Call is a script with its keys and the arguments that stay the same from
// one call to the next (an owner, a kind, a channel), boxed once, so that a
// call allocates only for the values it adds. A handle prepares its calls
// once, when it is made.
type Call struct {
	s     *Script
	head  []any // "evalsha", sha, number of keys, keys..., fixed arguments...
	nkeys int
}

// Prepare returns the Call of s on keys with the fixed leading arguments.
func (s *Script) Prepare(keys []string, fixed ...any) Call {
	head := make([]any, 0, 3+len(keys)+len(fixed))
	head = append(head, "evalsha", s.Hash(), len(keys))
	for _, k := range keys {
		head = append(head, k)
	}
	return Call{s: s, head: append(head, fixed...), nkeys: len(keys)}
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
		keys := make([]string, c.nkeys)
		for i := range keys {
			keys[i] = c.head[3+i].(string)
		}
		args := append(append([]any(nil), c.head[3+c.nkeys:]...), more...)
		return c.s.Run(ctx, rdb, keys, args...)
	}
	v := make([]any, len(c.head)+len(more))
	copy(v, c.head)
	copy(v[len(c.head):], more)
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
		keys := make([]string, c.nkeys)
		for i := range keys {
			keys[i] = c.head[3+i].(string)
		}
		return nil, c.s.fail(ctx, rdb, keys, err)
	}
	return r, nil
}
