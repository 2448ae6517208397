package scripts

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redistest"
)

func testSem() Sem {
	return Sem{Permits: "t:{s}:permits", Queue: "t:{s}:queue", Alive: "t:{s}:alive", Waiting: "t:{s}:waiting",
		Done: "t:{s}:done", Waiters: "t:{s}:waiters", Sizes: "t:{s}:sizes", Drained: "t:{s}:drained:", Kind: "rsemaphore", Publish: "PUBLISH",
		Channel: "t:{s}:ch"}
}

// reqSeq numbers the set and drain steps that name no request.
var reqSeq atomic.Int64

// stepReq returns req, or a fresh request id if it is "".
func stepReq(req string) string {
	if req == "" {
		return fmt.Sprintf("step-%d", reqSeq.Add(1))
	}
	return req
}

// semStep is one call of a semaphore script for the request req, or one
// change behind the scripts' back, and what it must reply.
type semStep struct {
	// try, set, add (Set's modes); acquire (fair: queues), tryacq (never
	// queues), register (registers if refused), release, leave, unregister
	// (the leave of a registered request), beat, rbeat (the registration's
	// heartbeat), drain, state; kill (req's heartbeat lapses), killreg (its
	// registration's does)
	op   string
	req  string
	n    int64
	want any // SemAttempt, SetResult, int64, bool, SemState; an error (errors.Is, and the keys unchanged); nil: not checked
}

// semCase is a table row: steps from an empty Redis, then what State and
// the queue must show.
type semCase struct {
	name  string
	steps []semStep
	state SemState
	queue []string // request ids queued at the end
}

// Shorthands for the replies.
func took(avail int64) SemAttempt    { return SemAttempt{OK: true, Available: avail} }
func refused(avail int64) SemAttempt { return SemAttempt{Available: avail} }
func changed(total, avail int64) SetResult {
	return SetResult{Changed: true, Total: total, Available: avail}
}

func TestSemScripts(t *testing.T) {
	runSemCases(t, []semCase{
		{"unset: acquire, release and drain are ErrNotSet", []semStep{
			{"acquire", "a:1", 1, errs.ErrNotSet},
			{"tryacq", "a:2", 1, errs.ErrNotSet},
			{"release", "r:1", 1, errs.ErrNotSet},
			{"drain", "", 0, errs.ErrNotSet},
			{"state", "", 0, SemState{}},
		}, SemState{}, nil},
		{"try sets only once", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"try", "", 5, SetResult{Total: 3, Available: 3}},
			{"acquire", "a:1", 2, took(1)},
			{"try", "", 5, SetResult{Total: 3, Available: 1}},
		}, SemState{Set: true, Available: 1, Total: 3}, nil},
		{"set keeps what is held held: available moves by n - old total, below 0 too", []semStep{
			{"set", "", 3, changed(3, 3)},
			{"acquire", "a:1", 2, took(1)},
			{"set", "", 5, changed(5, 3)},
			{"set", "", 1, changed(1, -1)},
			{"tryacq", "b:1", 1, refused(-1)},
			{"release", "r:1", 1, int64(0)},
			{"release", "r:2", 1, int64(1)},
			{"release", "r:3", 1, errs.ErrNotHeld},
		}, SemState{Set: true, Available: 1, Total: 1}, nil},
		{"add counts unset as 0, adds to both, may be negative", []semStep{
			{"add", "", 2, changed(2, 2)},
			{"add", "", 3, changed(5, 5)},
			{"acquire", "a:1", 4, took(1)},
			{"add", "", -3, changed(2, -2)},
			{"add", "", -3, errs.ErrInvalidArgument},
			{"release", "r:1", 4, int64(2)},
			{"add", "", -2, changed(0, 0)},
		}, SemState{Set: true, Available: 0, Total: 0}, nil},
		{"acquire takes n or nothing", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 2, took(1)},
			{"tryacq", "b:1", 2, refused(1)},
			{"tryacq", "c:1", 1, took(0)},
			{"tryacq", "d:1", 1, refused(0)},
		}, SemState{Set: true, Available: 0, Total: 3}, nil},
		{"n beyond the total could never be acquired", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"tryacq", "a:1", 4, errs.ErrInvalidArgument},
			{"acquire", "a:2", 4, errs.ErrInvalidArgument},
			{"acquire", "a:3", 3, took(0)},
		}, SemState{Set: true, Available: 0, Total: 3}, nil},
		{"a retried acquire is applied once, even after its release", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 2, took(1)},
			{"acquire", "a:1", 2, took(1)},
			{"tryacq", "a:1", 2, took(1)},
			{"release", "r:1", 2, int64(3)},
			{"acquire", "a:1", 2, took(3)},
		}, SemState{Set: true, Available: 3, Total: 3}, nil},
		{"leave gives back, and a late copy of the acquire is refused", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 2, took(1)},
			{"leave", "a:1", 2, true},
			{"leave", "a:1", 2, false},
			{"acquire", "a:1", 2, errs.ErrNotAcquired},
			{"tryacq", "a:1", 2, errs.ErrNotAcquired},
		}, SemState{Set: true, Available: 3, Total: 3}, nil},
		{"leave before the acquire arrives", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"leave", "a:1", 2, false},
			{"acquire", "a:1", 2, errs.ErrNotAcquired},
		}, SemState{Set: true, Available: 3, Total: 3}, nil},
		{"release returns permits; a retry is applied once", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 3, took(0)},
			{"release", "r:1", 2, int64(2)},
			{"release", "r:1", 2, int64(2)},
			{"release", "r:2", 2, errs.ErrNotHeld},
			{"release", "r:3", 1, int64(3)},
			{"release", "r:4", 1, errs.ErrNotHeld},
		}, SemState{Set: true, Available: 3, Total: 3}, nil},
		{"drain takes what is available", []semStep{
			{"try", "", 3, changed(3, 3)},
			{"acquire", "a:1", 1, took(2)},
			{"drain", "", 0, int64(2)},
			{"drain", "", 0, int64(0)},
			{"tryacq", "b:1", 1, refused(0)},
			{"release", "r:1", 1, int64(1)},
		}, SemState{Set: true, Available: 1, Total: 3}, nil},
		{"drain of a shrunk total takes nothing", []semStep{
			{"try", "", 2, changed(2, 2)},
			{"acquire", "a:1", 2, took(0)},
			{"set", "", 1, changed(1, -1)},
			{"drain", "", 0, int64(0)},
		}, SemState{Set: true, Available: -1, Total: 1}, nil},
	})
}

// runSemCases runs each case on miniredis and on redis-server. After the
// steps, State must match, and the queue: alive and waiting must hold the
// queue's requests, the queue's keys and the done zset must expire, and the
// permits hash must not.
func runSemCases(t *testing.T, cases []semCase) {
	t.Helper()
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		s := testSem()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				for i, st := range tc.steps {
					runSemStep(t, ctx, rdb, fmt.Sprintf("step %d: %s %s %d", i, st.op, st.req, st.n), st)
				}
				state, err := s.State(ctx, rdb)
				require.NoError(t, err)
				assert.Equal(t, tc.state, state, "state")
				q, err := rdb.LRange(ctx, s.Queue, 0, -1).Result()
				require.NoError(t, err)
				if len(tc.queue) == 0 {
					q = nil
				}
				assert.Equal(t, tc.queue, q, "queue")
				alive, err := rdb.ZRange(ctx, s.Alive, 0, -1).Result()
				require.NoError(t, err)
				waiting := waitingIDs(t, ctx, rdb, s.Waiting)
				assert.ElementsMatch(t, q, alive, "alive holds the queue's requests")
				assert.ElementsMatch(t, q, waiting, "waiting holds the queue's requests")
				for _, k := range []string{s.Queue, s.Alive, s.Waiting, s.Done} {
					if rdb.Exists(ctx, k).Val() == 1 {
						assert.Greater(t, rdb.PTTL(ctx, k).Val(), time.Duration(0), "%s expires", k)
					}
				}
				if rdb.Exists(ctx, s.Permits).Val() == 1 {
					assert.Equal(t, time.Duration(-1), rdb.PTTL(ctx, s.Permits).Val(), "the permits hash never expires")
				}
			})
		}
	})
}

// runSemStep runs one step and checks its reply. A step that must fail
// must also leave every key as it was.
func runSemStep(t *testing.T, ctx context.Context, rdb *redis.Client, name string, st semStep) {
	t.Helper()
	wantErr, isErr := st.want.(error)
	var before map[string]string
	if isErr {
		before = snapshot(t, rdb)
	}
	got, err := semOp(ctx, rdb, st)
	switch {
	case isErr:
		assert.ErrorIs(t, err, wantErr, name)
		assert.Equal(t, before, snapshot(t, rdb), "%s: refused, yet keys changed", name)
	case st.want == nil:
		require.NoError(t, err, name)
	default:
		require.NoError(t, err, name)
		checkReply(t, name, st.want, got)
	}
}

func semOp(ctx context.Context, rdb *redis.Client, st semStep) (any, error) {
	s := testSem()
	switch st.op {
	case "try", "set", "add":
		mode := map[string]string{"try": SetIfUnset, "set": SetTotal, "add": AddTotal}[st.op]
		return s.Set(ctx, rdb, stepReq(st.req), mode, st.n)
	case "acquire", "tryacq", "register":
		w := map[string]SemWait{"acquire": SemQueue, "tryacq": SemTry, "register": SemRegister}[st.op]
		return s.Acquire(ctx, rdb, st.req, st.n, w, time.Minute)
	case "release":
		r, err := s.Release(ctx, rdb, st.req, st.n, "")
		return r.Available, err
	case "leave", "unregister":
		others := int64(SemUnregistered)
		if st.op == "unregister" {
			others = 0
		}
		r, err := s.Leave(ctx, rdb, st.req, st.n, st.op == "unregister", time.Minute, others)
		return r.GaveBack, err
	case "beat":
		script, keys, args := s.Heartbeat(st.req, time.Minute)
		return script.Run(ctx, rdb, keys, args...).Int64()
	case "drain":
		return s.Drain(ctx, rdb, stepReq(st.req))
	case "state":
		return s.State(ctx, rdb)
	case "kill":
		return nil, rdb.ZAddXX(ctx, s.Alive, redis.Z{Score: 1, Member: st.req}).Err()
	case "rbeat":
		script, keys, args := s.Beat(clientOf(st.req), time.Minute)
		return script.Run(ctx, rdb, keys, args...).Int64()
	case "killreg":
		return nil, rdb.ZAddXX(ctx, s.Waiters, redis.Z{Score: 1, Member: clientOf(st.req)}).Err()
	}
	return nil, fmt.Errorf("unknown op %q", st.op)
}

// snapshot returns every key with its type, its value and whether it has a
// TTL, for comparing before and after.
func snapshot(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	out := dump(t, rdb)
	for k := range out {
		out[k] += fmt.Sprintf(" ttl:%v", rdb.PTTL(context.Background(), k).Val() > 0)
	}
	return out
}

func TestSemSHA(t *testing.T) {
	require.Len(t, semScripts, 8)
	for _, s := range semScripts {
		assert.Equal(t, s.Hash(), SHA(s.Name()))
		assert.True(t, strings.HasPrefix(s.Name(), "sem_"), s.Name())
	}
	assert.Empty(t, SHA("sem_lib"), "the prelude is not a script")
	assert.Empty(t, SHA("queue_lib"))
}

func TestParseSemGrant(t *testing.T) {
	assert.True(t, ParseSemGrant("granted"))
	for _, payload := range []string{"", "grant", "granted ", "@a:1 granted", "n:1", "1", "*"} {
		assert.False(t, ParseSemGrant(payload), payload)
	}
}

// clientOf returns the client id a request id starts with: its Client's
// member in the semaphore's waiter registry.
func clientOf(req string) string {
	client, _, _ := strings.Cut(req, ":")
	return client
}
