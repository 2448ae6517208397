package core_test

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/locktest"
)

// TestKeyspaceMatchesSchema drives every primitive through its operations
// on one miniredis and checks that every key and channel the library
// touches is one the schema names, with the schema's Redis type, used by
// a primitive the schema lists; and that every part of the schema was
// seen, so that the schema names nothing the library no longer uses.
// Keys are seen three ways: in every script call's KEYS (read off the
// wire of both processes), in the keyspace sampled after each step, and
// channels in every SUBSCRIBE and in every message published (a spy
// subscribed to every channel).
func TestKeyspaceMatchesSchema(t *testing.T) {
	locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		rec := newRecorder(mr)
		for _, p := range ps[:2] {
			p.Faults.DropReply(rec.command) // never matches: only watches
		}
		spy := ps[2].RDB.PSubscribe(ctx, "*")
		defer spy.Close()
		_, err := spy.Receive(ctx)
		require.NoError(t, err)
		go func() {
			for msg := range spy.Channel() {
				rec.channel(msg.Channel, "published")
			}
		}()

		d := &driver{t: t, ctx: ctx, a: ps[0], b: ps[1], rec: rec}
		for _, f := range []func(){d.rlock, d.multi, d.rfairlock, d.rrwlock, d.semaphore, d.fairSemaphore, d.expirable, d.latch, d.ratelimit, d.election} {
			f()
		}
		ps[0].Kill()
		ps[1].Kill()
		rec.check(t)
	})
}

// recorder keeps every key and channel seen, and how.
type recorder struct {
	mr *miniredis.Miniredis

	mu      sync.Mutex
	keys    map[string]string // key → its Redis type when sampled, "" if only named
	chans   map[string]string // channel → how it was seen
	unknown map[string]bool   // commands the recorder cannot read keys from
}

func newRecorder(mr *miniredis.Miniredis) *recorder {
	return &recorder{mr: mr, keys: map[string]string{}, chans: map[string]string{}, unknown: map[string]bool{}}
}

// command records the keys and channels of one command written to Redis.
// It reports false: as a DropReply matcher, it never drops anything.
func (r *recorder) command(args []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch args[0] {
	case "EVALSHA", "EVAL", "EVALSHA_RO", "EVAL_RO":
		n, err := strconv.Atoi(args[2])
		if err != nil || 3+n > len(args) {
			r.unknown[strings.Join(args, " ")] = true
			break
		}
		for _, k := range args[3 : 3+n] {
			if _, ok := r.keys[k]; !ok {
				r.keys[k] = ""
			}
		}
	case "HGET": // ForceUnlock's read of the fence
		if len(args) > 1 {
			if _, ok := r.keys[args[1]]; !ok {
				r.keys[args[1]] = ""
			}
		}
	case "SUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "SUNSUBSCRIBE", "PUBLISH", "SPUBLISH":
		for _, ch := range args[1:] {
			r.chans[ch] = strings.ToLower(args[0])
			if args[0] == "PUBLISH" || args[0] == "SPUBLISH" {
				break
			}
		}
	case "PING", "HELLO", "CLIENT", "CONFIG", "WAIT", "SCRIPT", "INFO", "SELECT", "READONLY",
		"CLUSTER", "PUNSUBSCRIBE", "QUIT", "RESET", "AUTH", "ROLE":
	default:
		r.unknown[args[0]] = true
	}
	return false
}

// channel records a channel seen as how says.
func (r *recorder) channel(ch, how string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chans[ch] = how
}

// sample records every key in Redis now, with its type.
func (r *recorder) sample() {
	keys := r.mr.Keys()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		r.keys[k] = r.mr.Type(k)
	}
}

// kindOf is the primitive a test name is used by: each primitive of the
// drive has a name of its own, "<kind>/<anything>".
func kindOf(key string) string {
	_, rest, _ := strings.Cut(key, "{")
	name, _, _ := strings.Cut(rest, "}")
	kind, _, _ := strings.Cut(name, "/")
	return kind
}

// match returns the schema's part for key, the default prefix "rc" first.
func match(key string) (core.Part, bool) {
	rest, ok := strings.CutPrefix(key, "rc:")
	if !ok {
		return 0, false
	}
	client := true
	if strings.HasPrefix(rest, "{") {
		_, after, ok := strings.Cut(rest, "}:")
		if !ok {
			return 0, false
		}
		rest, client = after, false
	}
	for p, k := range core.Schema() {
		if k.Client != client {
			continue
		}
		if k.Tail == "" && rest == k.Part ||
			k.Tail != "" && strings.HasPrefix(rest, k.Part+":") && len(rest) > len(k.Part)+1 {
			return core.Part(p), true
		}
	}
	return 0, false
}

// check asserts what TestKeyspaceMatchesSchema promises.
func (r *recorder) check(t *testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Empty(t, r.unknown, "commands whose keys the recorder cannot read: teach it")
	seen := map[core.Part]bool{}
	for key, typ := range r.keys {
		p, ok := match(key)
		if !assert.True(t, ok, "key %s is not in the schema (internal/core/keys.go)", key) {
			continue
		}
		k := core.Describe(p)
		seen[p] = true
		assert.False(t, k.IsChannel(), "key %s is the schema's channel %s", key, k.Pattern())
		if typ != "" {
			assert.Equal(t, k.Type, typ, "the type of %s (%s)", key, k.Pattern())
			assert.Contains(t, k.Kinds, kindOf(key), "key %s of kind %s: the schema's %s lists only %v", key, kindOf(key), k.Pattern(), k.Kinds)
		}
	}
	for ch, how := range r.chans {
		p, ok := match(ch)
		if !assert.True(t, ok, "channel %s (%s) is not in the schema (internal/core/keys.go)", ch, how) {
			continue
		}
		k := core.Describe(p)
		seen[p] = true
		assert.True(t, k.IsChannel(), "channel %s (%s) is the schema's key %s", ch, how, k.Pattern())
		if !k.Client && !slices.Equal(k.Kinds, []string{core.AnyKind}) { // the server check's: any Client's
			assert.Contains(t, k.Kinds, kindOf(ch), "channel %s (%s) of kind %s: the schema's %s lists only %v", ch, how, kindOf(ch), k.Pattern(), k.Kinds)
		}
	}
	for p, k := range core.Schema() {
		assert.True(t, seen[core.Part(p)], "the schema's %s was never seen: drive the operation that uses it, or drop it", k.Pattern())
	}
	if t.Failed() {
		t.Logf("keys seen: %v", slices.Sorted(maps.Keys(r.keys)))
	}
}

// forget asserts what Forget on name reports: false while a lock of any
// kind holds or waits for it.
func forget(t *testing.T, ctx context.Context, f interface {
	Forget(context.Context) (bool, error)
}, want bool, why string) {
	t.Helper()
	ok, err := f.Forget(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, ok, "Forget while %s", why)
}
