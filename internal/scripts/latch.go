package scripts

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

// The countdown latch's scripts: lib.lua, latch_lib.lua, then
// the operation.
var (
	latchSet    = loadLatch("latch_set")
	latchDown   = loadLatch("latch_down")
	latchCount  = loadLatch("latch_count")
	latchDelete = loadLatch("latch_delete")
)

// latchScripts lists this file's scripts, for SHA.
var latchScripts = []*Script{latchSet, latchDown, latchCount, latchDelete}

func loadLatch(name string) *Script { return loadWith(name, "latch_lib.lua") }

// Latch names one countdown latch (see latch_lib.lua).
type Latch struct {
	Latch, Done            string // keys
	Kind, Publish, Channel string
	Marks                  time.Duration // how long request markers live; 0: RequestTTL
	Spent                  time.Duration // how long a latch at 0 lives
}

func (l Latch) keys() []string { return []string{l.Latch, l.Done} }

// args prepends the arguments every latch script takes.
func (l Latch) args(more ...any) []any {
	return append([]any{l.Kind, l.Publish, l.Channel, marks(l.Marks), l.Spent.Milliseconds()}, more...)
}

// TrySet sets the count to n under the request id req if the latch was
// never set or is at 0, and reports whether it did; when it did not, count
// is what is left to count down. With WithWaitReplicas a shortfall is
// returned beside the reply: the count was set, or not, on the primary.
func (l Latch) TrySet(ctx context.Context, rdb redis.Scripter, req string, n int64) (set bool, count int64, err error) {
	v, err := latchSet.Run(ctx, rdb, l.keys(), l.args(req, n)...)
	r, err := decode(v, err, func(v any) ([]int64, error) { return ints(v, 2) })
	if r == nil {
		return false, 0, err
	}
	return r[0] == 1, r[1], err
}

// CountDown counts the latch down by one under the request id req and
// returns what is left; counted is false when it was at 0 already. A latch
// never set is ErrNotSet. With WithWaitReplicas a shortfall is returned
// beside the reply, as for TrySet.
func (l Latch) CountDown(ctx context.Context, rdb redis.Scripter, req string) (left int64, counted bool, err error) {
	v, err := latchDown.Run(ctx, rdb, l.keys(), l.args(req)...)
	r, err := decode(v, err, func(v any) ([]int64, error) { return ints(v, 1) })
	switch {
	case r == nil:
		return 0, false, err
	case r[0] == -2:
		return 0, false, errs.ErrNotSet
	case len(r) < 2:
		return 0, false, errUnexpected(v)
	}
	return r[1], r[0] == 1, err
}

// LatchState is what latch_count reads.
type LatchState struct {
	Count int64 // CountDowns left; 0: open
	Round int64 // the current round (see latch_lib.lua)
	Born  int64 // the round the latch's hash was created in
}

// State reads the latch. A latch never set is ErrNotSet.
func (l Latch) State(ctx context.Context, rdb redis.Scripter) (LatchState, error) {
	v, err := latchCount.Run(ctx, rdb, l.keys(), l.args()...)
	r, err := decode(v, err, func(v any) ([]int64, error) { return ints(v, 1) })
	switch {
	case err != nil:
		return LatchState{}, err
	case r[0] == -2:
		return LatchState{}, errs.ErrNotSet
	case len(r) < 4:
		return LatchState{}, errUnexpected(v)
	}
	return LatchState{Count: r[1], Round: r[2], Born: r[3]}, nil
}

// Delete deletes the latch (its markers expire by themselves), and reports
// whether it existed.
func (l Latch) Delete(ctx context.Context, rdb redis.Scripter) (bool, error) {
	v, err := latchDelete.Run(ctx, rdb, l.keys(), l.args()...)
	return decode(v, err, isOne)
}
