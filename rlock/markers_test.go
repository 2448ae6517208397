package rlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
)

// The markers that let a retried release be recognised, and a late copy of
// an acquire that gave up be refused, cost one key per Client and name,
// however many handles lock and unlock it: a busy service that makes a
// handle per request must not leave a key per request behind.
func TestMarkersKeyPerClientAndName(t *testing.T) {
	const cycles = 1000
	type locker interface {
		Lock(context.Context) error
		Unlock(context.Context) error
	}
	kinds := []struct {
		name string
		new  func(p *locktest.Proc) locker
	}{
		{"rlock", func(p *locktest.Proc) locker { return rlock.New(p.C, "n") }},
		{"rfairlock", func(p *locktest.Proc) locker { return rfairlock.New(p.C, "n") }},
		{"rrwlock", func(p *locktest.Proc) locker { return rrwlock.New(p.C, "n") }},
		{"rrwlock read", func(p *locktest.Proc) locker { return reader{rrwlock.New(p.C, "n")} }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
				ctx := context.Background()
				for range cycles {
					m := k.new(ps[0])
					require.NoError(t, m.Lock(ctx))
					require.NoError(t, m.Unlock(ctx))
				}
				// Acquires that give up, while another Client holds the name.
				var holder locker = k.new(ps[1])
				if _, ok := holder.(reader); ok {
					holder = rrwlock.New(ps[1].C, "n") // a writer
				}
				require.NoError(t, holder.Lock(ctx))
				for range 100 {
					wctx, cancel := context.WithTimeout(ctx, time.Millisecond)
					err := k.new(ps[0]).Lock(wctx)
					cancel()
					require.ErrorIs(t, err, context.DeadlineExceeded)
				}
				var markers []string
				for _, key := range mr.Keys() {
					if strings.Contains(key, "}:rel:") {
						markers = append(markers, key)
					}
				}
				t.Logf("%s: %d fresh handles' Lock+Unlock and 100 given-up Locks leave %d keys of markers, %d in all", k.name, cycles, len(markers), len(mr.Keys()))
				assert.Len(t, markers, 1, "one Client's markers: %v", head(markers))
			})
		})
	}
}

// reader is an RWMutex's read side.
type reader struct{ m *rrwlock.RWMutex }

func (r reader) Lock(ctx context.Context) error   { return r.m.RLock(ctx) }
func (r reader) Unlock(ctx context.Context) error { return r.m.RUnlock(ctx) }

func head(keys []string) []string {
	if len(keys) > 4 {
		return append(keys[:4:4], fmt.Sprintf("... %d more", len(keys)-4))
	}
	return keys
}
