package backoff

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redcoord/redcoord/internal/errs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms = time.Millisecond

// pauses returns the next n pauses of b.
func pauses(b *Backoff, n int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, b.Next())
	}
	return out
}

// Without Rand a pause is the back-off itself: it doubles from First up to
// Max, and Reset starts it again.
func TestNextWithoutJitter(t *testing.T) {
	b := Backoff{First: 10 * ms, Max: 500 * ms}
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 500 * ms, 500 * ms},
		pauses(&b, 8))
	b.Reset()
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms}, pauses(&b, 2))
}

// With Rand a pause is b/2 plus Rand's draw in [0, b/2+1): the lowest and
// highest draws give b/2 and b.
func TestNextWithJitter(t *testing.T) {
	var asked []time.Duration
	low := Backoff{First: 50 * ms, Max: 400 * ms, Rand: func(n time.Duration) time.Duration {
		asked = append(asked, n)
		return 0
	}}
	assert.Equal(t, []time.Duration{25 * ms, 50 * ms, 100 * ms, 200 * ms, 200 * ms}, pauses(&low, 5))
	assert.Equal(t, []time.Duration{25*ms + 1, 50*ms + 1, 100*ms + 1, 200*ms + 1, 200*ms + 1}, asked)

	high := Backoff{First: 50 * ms, Max: 400 * ms, Rand: func(n time.Duration) time.Duration { return n - 1 }}
	assert.Equal(t, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 400 * ms}, pauses(&high, 5))
}

// Max does not cap First: the first pause is First's, the next Max's.
func TestFirstAboveMax(t *testing.T) {
	b := Backoff{First: 10 * ms, Max: 2 * ms}
	assert.Equal(t, []time.Duration{10 * ms, 2 * ms, 2 * ms}, pauses(&b, 3))
}

// Sleep returns nil when d is over, ctx.Err() when ctx ends first and
// ErrClosed when closed is closed first.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		require.NoError(t, Sleep(context.Background(), 30*ms, nil))
		assert.Equal(t, 30*ms, time.Since(start))

		ctx, cancel := context.WithTimeout(context.Background(), 10*ms)
		defer cancel()
		start = time.Now()
		assert.Equal(t, context.DeadlineExceeded, Sleep(ctx, time.Hour, nil))
		assert.Equal(t, 10*ms, time.Since(start))

		closed := make(chan struct{})
		time.AfterFunc(5*ms, func() { close(closed) })
		start = time.Now()
		assert.Equal(t, errs.ErrClosed, Sleep(context.Background(), time.Hour, closed))
		assert.Equal(t, 5*ms, time.Since(start))
	})
}

// A loop that a context ends makes no more tries than the contract's bound.
func TestBoundedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const length = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), length)
		defer cancel()
		b := Backoff{First: 10 * ms, Max: 40 * ms, Rand: func(time.Duration) time.Duration { return 0 }}
		tries := 0
		for {
			tries++
			if Sleep(ctx, b.Next(), nil) != nil {
				break
			}
		}
		assert.LessOrEqual(t, tries, 1+int(2*length/b.First))
		// Pauses of 5ms, 10ms, then 20ms: 51 of them end within the second,
		// and the 52nd try's pause is cut short.
		assert.Equal(t, 52, tries)
	})
}
