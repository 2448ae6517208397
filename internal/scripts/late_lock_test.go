package scripts

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// lateLock is one kind of lock hash's requests, for TestLateCopiesLock:
// acquire takes or re-enters the hold of token held (0: none) and reports
// the reply; release drops one hold of token named; leave gives back what
// acquire request req did; more are the kind's own late copies (beside
// the renewal and Extend every lock hash has), sent for the earlier hold
// (token old) or the fresh one (token fresh); force is the kind's force
// by request req, told the fence's last token upto.
type lateLock struct {
	lock    *Lock
	acquire func(req string, held uint64) (Acquired, error)
	release func(req string, named uint64) (int64, error)
	leave   func(req string) (bool, error)
	force   func(upto, req string) (Forced, error)
	more    func(old, fresh uint64) []lateCopy
}

// Every request that changes a lock hash names its hold (the token) and,
// where the kind numbers them, is numbered within it. The owner's earlier
// hold o:1 (re-entered by o:2, released by o:3 and o:4) ended; its fresh
// hold o:5 was re-entered by o:6, released once by o:7, re-entered by o:8
// and extended by o:9 then o:10. A copy of any of those requests that
// reaches Redis now changes nothing in the fresh hold (lease, count,
// token, last request, metadata) and says so: rlock, rfairlock, rrwlock's
// write hold and relection (whose Proclaims are numbered too).
func TestLateCopiesLock(t *testing.T) {
	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		ctx := context.Background()
		lease := NewLeaseArg(time.Minute, nil)
		fairKind := func(f Fair) lateLock {
			return lateLock{lock: f.Lock,
				acquire: func(req string, held uint64) (Acquired, error) {
					a, err := f.Acquire(ctx, rdb, req, TokenArg(held), lease, false, time.Minute)
					return a.Acquired, err
				},
				release: func(req string, named uint64) (int64, error) {
					return f.Release(ctx, rdb, req, false, TokenArg(named))
				},
				leave: func(req string) (bool, error) { return f.Leave(ctx, rdb, req) },
				force: func(upto, req string) (Forced, error) { return f.Force(ctx, rdb, "", upto, req) },
				more: func(uint64, uint64) []lateCopy {
					script, keys, args := f.Heartbeat("o:1", time.Minute)
					return []lateCopy{{"the earlier wait's heartbeat", int64Of(ctx, rdb, script, keys, args...), int64(0)}}
				}}
		}
		kinds := map[string]func() lateLock{
			"lock": func() lateLock {
				l := testLock("o")
				return lateLock{lock: &l,
					acquire: func(req string, held uint64) (Acquired, error) {
						return l.Acquire(ctx, rdb, req, TokenArg(held), lease, NoRegistry)
					},
					release: func(req string, named uint64) (int64, error) {
						n, _, err := l.Release(ctx, rdb, req, false, TokenArg(named))
						return n, err
					},
					leave: func(req string) (bool, error) {
						undone, _, err := l.Leave(ctx, rdb, req, true)
						return undone, err
					},
					force: func(upto, req string) (Forced, error) { return l.Force(ctx, rdb, "", upto, req) },
					more: func(uint64, uint64) []lateCopy {
						multi := func() (any, error) {
							m, err := AcquireMulti(ctx, rdb, "rlock", []MultiPart{{Lock: l, Req: "o:1", Held: NoToken}}, lease)
							return m.OK, err
						}
						return []lateCopy{{"the earlier hold's MultiMutex acquire", multi, false}}
					}}
			},
			"fair": func() lateLock { return fairKind(testFair("o")) },
			"write": func() lateLock {
				rw := testRW("o")
				return lateLock{lock: &rw.Lock,
					acquire: func(req string, held uint64) (Acquired, error) {
						a, _, err := rw.Write(ctx, rdb, req, TokenArg(held), lease, false, NoRegistry, time.Minute)
						return a, err
					},
					release: func(req string, named uint64) (int64, error) {
						n, _, err := rw.Unlock(ctx, rdb, req, false, TokenArg(named))
						return n, err
					},
					leave: func(req string) (bool, error) {
						undone, _, err := rw.Leave(ctx, rdb, req, true, true)
						return undone, err
					},
					force: func(upto, req string) (Forced, error) { return rw.Force(ctx, rdb, "", upto, req) }}
			},
			"elect": func() lateLock {
				e := testElect("o")
				k := fairKind(e)
				heartbeat := k.more
				k.more = func(old, fresh uint64) []lateCopy {
					proclaim := func(req string, term uint64) func() (any, error) {
						return func() (any, error) { return e.Proclaim(ctx, rdb, req, TokenArg(term), "late "+req) }
					}
					return append(heartbeat(old, fresh),
						lateCopy{"the earlier term's Proclaim", proclaim("o:2", old), false},
						lateCopy{"a Proclaim numbered below the term's last", proclaim("o:11", fresh), true},
						lateCopy{"the term's last Proclaim, retried", proclaim("o:12", fresh), true})
				}
				return k
			},
		}
		for name, kind := range kinds {
			t.Run(name, func(t *testing.T) {
				require.NoError(t, rdb.FlushAll(ctx).Err())
				k := kind()
				step := func(req string, n int64, err error, want int64) {
					t.Helper()
					require.NoError(t, err, req)
					require.Equal(t, want, n, req)
				}
				acquire := func(req string, held uint64, count int64) uint64 {
					t.Helper()
					a, err := k.acquire(req, held)
					require.True(t, a.OK, req)
					step(req, a.Count, err, count)
					return a.Token
				}
				release := func(req string, named uint64, count int64) {
					t.Helper()
					n, err := k.release(req, named)
					step(req, n, err, count)
				}
				extend := func(req string, token uint64, lease time.Duration) func() (any, error) {
					return func() (any, error) { return k.lock.Extend(ctx, rdb, req, lease, TokenArg(token), nil) }
				}
				old := acquire("o:1", 0, 1)
				acquire("o:2", old, 2)
				release("o:3", old, 1)
				release("o:4", old, 0)
				fresh := acquire("o:5", 0, 1)
				acquire("o:6", fresh, 2)
				release("o:7", fresh, 1)
				acquire("o:8", fresh, 2)
				for _, req := range []string{"o:9", "o:10"} {
					ok, err := extend(req, fresh, map[string]time.Duration{"o:9": 20 * time.Second, "o:10": 10 * time.Second}[req])()
					require.NoError(t, err)
					require.Equal(t, true, ok, req)
				}
				if name == "elect" {
					for _, req := range []string{"o:11", "o:12"} {
						ok, err := testElect("o").Proclaim(ctx, rdb, req, TokenArg(fresh), "v"+req)
						require.NoError(t, err)
						require.True(t, ok, req)
					}
				}

				renew, keys, args := k.lock.Renewal(time.Second, TokenArg(old))
				acquireCopy := func(req string, held uint64) func() (any, error) {
					return func() (any, error) { a, err := k.acquire(req, held); return a.OK, err }
				}
				releaseCopy := func(req string, named uint64) func() (any, error) {
					return func() (any, error) { return k.release(req, named) }
				}
				leaveCopy := func(req string) func() (any, error) { return func() (any, error) { return k.leave(req) } }
				forceCopy := func() (any, error) { return k.force(strconv.FormatUint(old, 10), "f:1") }
				copies := []lateCopy{
					{"the earlier hold's renewal", int64Of(ctx, rdb, renew, keys, args...), int64(0)},
					{"the earlier hold's Extend", extend("o:3", old, time.Second), false},
					{"the earlier hold's acquire", acquireCopy("o:1", 0), false},
					{"the earlier hold's re-entry", acquireCopy("o:2", old), false},
					{"the earlier hold's release of one of two", releaseCopy("o:3", old), int64(-1)},
					{"the earlier hold's release to zero", releaseCopy("o:4", old), int64(0)},
					{"the earlier hold's give-back", leaveCopy("o:1"), false},
					{"a ForceUnlock sent while the earlier hold held", forceCopy, ForceMoved},
					{"the fresh hold's acquire", acquireCopy("o:5", 0), false},
					{"the fresh hold's re-entry sent before a release", acquireCopy("o:6", fresh), false},
					{"the fresh hold's release sent before a re-entry", releaseCopy("o:7", fresh), int64(2)},
					{"the fresh hold's re-entry's give-back", leaveCopy("o:6"), false},
					{"the fresh hold's Extend sent before its last", extend("o:9", fresh, 20*time.Second), true},
					{"the fresh hold's last Extend, retried", extend("o:10", fresh, 10*time.Second), true},
				}
				if k.more != nil { // first: the give-backs below mark o:1 left
					copies = append(k.more(old, fresh), copies...)
				}
				checkLateCopies(t, ctx, rdb, copies, ":rel:o")
			})
		}
	})
}
