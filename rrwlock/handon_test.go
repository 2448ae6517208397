package rrwlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rrwlock"
)

// A write release whose next registered writer is in the releasing Client
// hands the wake to it locally: no writer's wake is published (the last
// release, with no writer left, still tells the readers' channel), and
// each writer takes the lock at once.
func TestWriteReleaseHandsOnLocally(t *testing.T) {
	locktest.InBubble(t, 1, func(t *testing.T, _ *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		p := ps[0]
		holder := rrwlock.New(p.C, "n")
		require.NoError(t, holder.Lock(ctx))
		var done []<-chan timed
		for range 2 {
			w := rrwlock.New(p.C, "n")
			done = append(done, timedAsync(ctx, func(ctx context.Context) error {
				if err := w.Lock(ctx); err != nil {
					return err
				}
				return w.Unlock(ctx)
			}))
			synctest.Wait()
		}
		messages := publishedOn(t, p)

		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		for _, d := range done {
			r := <-d
			require.NoError(t, r.err)
			assert.Equal(t, released, r.at, "every hand-off at once")
		}
		assert.Equal(t, []string{"rc:{n}:ch *"}, messages(), "only the last release's word to readers")
	})
}

// publishedOn records every message published on the server from now on,
// as "<channel> <payload>", and returns a function that lists them once
// the bubble is idle.
func publishedOn(t *testing.T, p *locktest.Proc) func() []string {
	t.Helper()
	ctx := context.Background()
	ps := p.RDB.PSubscribe(ctx, "*")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx) // the confirmation
	require.NoError(t, err)
	var mu sync.Mutex
	var got []string
	msgs := ps.Channel()
	go func() {
		for m := range msgs {
			mu.Lock()
			got = append(got, m.Channel+" "+m.Payload)
			mu.Unlock()
		}
	}()
	return func() []string {
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}
