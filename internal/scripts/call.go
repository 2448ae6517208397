package scripts

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// prepared is what a handle's calls of one family of scripts (a lock
// hash's, a fair lock's, a read-write lock's) send the same every time,
// boxed once when the handle is made (see Lock.Prepared), so that a call
// allocates only for the arguments it adds: the family's keys, its fixed
// leading arguments (a kind, a channel, an owner) and the handle's ttl in
// milliseconds, how long its leases, heartbeats and registrations last. A
// family on the lock hash's arguments (on) shares them. A family that is
// not prepared prepares on each call.
type prepared struct {
	keys []any // boxed
	// args are the fixed arguments, then the ttl in milliseconds, in one
	// array: for a lock hash, every argument of its renewal but the token.
	args []any
	ttl  time.Duration
	hash [1]string // the lock hash, the first key: the keys of a lock hash's renewal
}

// prepare boxes keys, fixed (which may be boxed already: it is copied)
// and ttl for calls on keys with leases of ttl; keys boxed in boxed
// already share their boxes.
func prepare(keys []string, fixed []any, ttl time.Duration, boxed []any) *prepared {
	args := append(append(make([]any, 0, len(fixed)+1), fixed...), ttl.Milliseconds())
	return &prepared{keys: box(keys, boxed), args: args, ttl: ttl, hash: [1]string{keys[0]}}
}

// on returns p's calls on keys, sharing p's arguments and boxed keys.
func (p *prepared) on(keys []string) *prepared {
	return &prepared{keys: box(keys, p.keys), args: p.args, ttl: p.ttl, hash: p.hash}
}

// box returns keys as script arguments: the boxes in boxed of those that
// are in it, new ones for the others.
func box(keys []string, boxed []any) []any {
	v := make([]any, len(keys))
	for i, k := range keys {
		v[i] = k
		for _, b := range boxed {
			if b == k {
				v[i] = b
				break
			}
		}
	}
	return v
}

// fixed returns the fixed arguments, which a caller appending to them
// copies.
func (p *prepared) fixed() []any {
	n := len(p.args) - 1
	return p.args[:n:n]
}

// ms returns d in milliseconds as a script argument: boxed once when d is
// the ttl.
func (p *prepared) ms(d time.Duration) any {
	if d == p.ttl {
		return p.args[len(p.args)-1]
	}
	return d.Milliseconds()
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

// processor is what a prepared call is sent with: a go-redis client. The
// Scripter that WithWaitReplicas makes, which sends each script in a
// pipeline with WAIT, is not one: the call goes through its EvalSha
// instead.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// run runs s on p's keys with p's fixed arguments, then more, by the
// script's SHA1, loading it on NOSCRIPT (see RunBySHA), and returns the
// reply or an error as Script.Run does.
func (p *prepared) run(ctx context.Context, rdb redis.Scripter, s *Script, more ...any) (any, error) {
	fixed := p.fixed()
	pr, ok := rdb.(processor)
	if !ok {
		return s.Run(ctx, rdb, p.stringKeys(), append(append([]any(nil), fixed...), more...)...)
	}
	v := make([]any, 3+len(p.keys)+len(fixed)+len(more))
	v[0], v[1], v[2] = "evalsha", s.shaArg, len(p.keys)
	n := 3 + copy(v[3:], p.keys)
	n += copy(v[n:], fixed)
	copy(v[n:], more)
	cmd := redis.NewCmd(ctx, v...)
	_ = pr.Process(ctx, cmd)
	if NoScript(cmd.Err()) {
		loaded := Load(ctx, rdb, s.Script, p.hash[0])
		cmd = redis.NewCmd(ctx, v...)
		_ = pr.Process(ctx, cmd)
		cmd = Again(loaded, cmd)
	}
	r, err := cmd.Result()
	if err != nil {
		return nil, s.fail(ctx, rdb, p.stringKeys(), err)
	}
	return r, nil
}

// stringKeys returns the keys as strings.
func (p *prepared) stringKeys() []string {
	keys := make([]string, len(p.keys))
	for i, k := range p.keys {
		keys[i] = k.(string)
	}
	return keys
}
