// Package roundtrip counts the round trips a go-redis client makes. The tests
// and the bench command share it.
package roundtrip

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/obs"
)

// Counter is a go-redis hook ([redis.Hook]) that counts round trips: one
// per Process call and one per pipeline, whatever its length. Install it with
// client.AddHook(c); the zero value is ready to use and safe for concurrent
// use. A Counter must not be copied after first use.
//
// Not counted: dials; go-redis's own retries inside one call; Pub/Sub
// traffic, which bypasses hooks; and the connection handshake. go-redis runs
// the handshake of a new connection (HELLO, CLIENT MAINT_NOTIFICATIONS,
// SELECT, ...) through the client's hooks, nested inside the call that needed
// the connection; Counter marks the context of every call it counts and
// skips calls made with a marked context. The handshake of a Pub/Sub
// connection runs outside any call, so HELLO and CLIENT MAINT_NOTIFICATIONS
// are also skipped by name wherever they come from. Calls made with a
// context from Uncounted are skipped too: the Client's one-time check of
// the server's settings, which belongs to no operation. A command skipped
// is neither a round trip nor counted by Commands.
type Counter struct {
	trips atomic.Int64

	mu       sync.Mutex       // protects commands
	commands map[string]int64 // lower-cased command name -> count
}

var _ redis.Hook = (*Counter)(nil)

// Load returns the number of round trips counted since the last Reset.
func (r *Counter) Load() int64 { return r.trips.Load() }

// Reset sets the round-trip count and every command count to zero.
func (r *Counter) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trips.Store(0)
	clear(r.commands)
}

// Commands returns how many commands of the given name (case-insensitive,
// e.g. "evalsha") were processed since the last Reset, counting commands
// inside pipelines too.
func (r *Counter) Commands(name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commands[strings.ToLower(name)]
}

// DialHook implements [redis.Hook]; dials are not counted.
func (r *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements [redis.Hook]: one round trip, one command.
func (r *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if r.skip(ctx) || isHandshake(cmd) {
			return next(ctx, cmd)
		}
		r.count(cmd)
		return next(context.WithValue(ctx, r, true), cmd)
	}
}

// ProcessPipelineHook implements [redis.Hook]: one round trip, every command
// in the pipeline counted by name.
func (r *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if r.skip(ctx) || len(cmds) == 0 {
			return next(ctx, cmds)
		}
		r.count(cmds...)
		return next(context.WithValue(ctx, r, true), cmds)
	}
}

// skip reports whether ctx belongs to a call r already counted (a command
// made with it is part of that call's connection handshake) or is marked
// Uncounted. The context key is r itself, so two Counter on one client
// count independently.
func (r *Counter) skip(ctx context.Context) bool {
	return ctx.Value(r) != nil || obs.IsHousekeeping(ctx)
}

// Uncounted marks ctx so that no Counter counts the calls made with it: for
// traffic that belongs to no operation, as the Client marks its own
// (obs.Housekeeping).
func Uncounted(ctx context.Context) context.Context { return obs.Housekeeping(ctx) }

// isHandshake reports whether cmd is one only go-redis's connection handshake
// sends.
func isHandshake(cmd redis.Cmder) bool {
	switch strings.ToLower(cmd.Name()) {
	case "hello":
		return true
	case "client":
		args := cmd.Args()
		if len(args) < 2 {
			return false
		}
		sub, _ := args[1].(string)
		return strings.EqualFold(sub, "maint_notifications")
	}
	return false
}

// count adds one round trip carrying cmds.
func (r *Counter) count(cmds ...redis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trips.Add(1)
	if r.commands == nil {
		r.commands = make(map[string]int64)
	}
	for _, c := range cmds {
		r.commands[strings.ToLower(c.Name())]++
	}
}
