package scripts

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

// The expirable semaphore's scripts: lib.lua, xsem_lib.lua,
// then the operation.
var (
	xsemAcquire = loadXSem("xsem_acquire")
	xsemRelease = loadXSem("xsem_release")
	xsemExtend  = loadXSem("xsem_extend")
	xsemLeave   = loadXSem("xsem_leave")
	xsemSet     = loadXSem("xsem_set")
	xsemState   = loadXSem("xsem_state")
)

// xsemScripts lists this file's scripts, for SHA.
var xsemScripts = []*Script{xsemAcquire, xsemRelease, xsemExtend, xsemLeave, xsemSet, xsemState}

func loadXSem(name string) *Script { return loadWith(name, "xsem_lib.lua") }

// XSem names one expirable semaphore (see xsem_lib.lua).
type XSem struct {
	Permits, Leases, Tokens, Fence, Done, Waiters string // keys
	Kind, Publish, Channel                        string
	Marks                                         time.Duration // as Sem.Marks
}

func (s XSem) keys() []string {
	return []string{s.Permits, s.Leases, s.Tokens, s.Fence, s.Done, s.Waiters}
}

// args prepends the arguments every expirable semaphore script takes.
func (s XSem) args(more ...any) []any {
	return append([]any{s.Kind, s.Publish, s.Channel, marks(s.Marks)}, more...)
}

// XAttempt is the reply of an acquire attempt.
type XAttempt struct {
	OK    bool
	Token uint64        // the permit's fencing token, when OK
	Wait  time.Duration // when not OK: until the soonest expiry that frees a permit
	Free  int64         // permits free after it (below 0 while the total is under what is held)
}

// Acquire takes the permit id with a lease, or finds that it holds it
// already (a retry), and settles its Client's registration by w: SemTry,
// SemRegister (Behind the Client's other blocked acquires of the name,
// each asking for 1, or none) or SemUnregister, as for Sem.Acquire; hb is
// how long a registration lives without renewal (see Beat). A total of 0 is
// ErrInvalidArgument (naming "permits"); unset permits are ErrNotSet; an
// acquire that was given up is ErrNotAcquired.
func (s XSem) Acquire(ctx context.Context, rdb redis.Scripter, id string, lease time.Duration, w SemWait,
	hb time.Duration) (XAttempt, error) {
	v, err := xsemAcquire.Run(ctx, rdb, s.keys(), s.args(id, lease.Milliseconds(), w.arg, hb.Milliseconds(), w.others)...)
	return decode(v, err, xattempt)
}

// Beat returns the watchdog's renewal of the registration of the Client
// client (see Acquire): lock_beat on the waiter registry.
func (s XSem) Beat(client string, ttl time.Duration) (*redis.Script, []string, []any) {
	return lockBeat.Script, []string{s.Waiters}, s.args(client, ttl.Milliseconds())
}

// xattempt decodes an expirable acquire's reply.
func xattempt(v any) (XAttempt, error) {
	r, err := ints(v, 1)
	if err != nil {
		return XAttempt{}, err
	}
	switch {
	case r[0] == -1 && len(r) > 1:
		return XAttempt{}, errs.Invalid("permits", "the semaphore's total is %d: no permit could ever be acquired", r[1])
	case r[0] == -2:
		return XAttempt{}, errs.ErrNotSet
	case r[0] == -3:
		return XAttempt{}, errs.New(errs.ErrNotAcquired, "the request was given up")
	case r[0] == 1 && len(r) > 2:
		return XAttempt{OK: true, Token: uint64(r[1]), Free: r[2]}, nil
	case r[0] == 0 && len(r) > 2:
		return XAttempt{Wait: time.Duration(r[1]) * time.Millisecond, Free: r[2]}, nil
	}
	return XAttempt{}, errUnexpected(v)
}

// Release returns the permit id under the request id req and reports
// whether it was held (false: unknown, expired, or released already by
// another request). self is the releasing Client's id when it has blocked
// acquires of the name ("": none): a release that would wake it hands the
// permit on to them instead, own saying how many a wake would have said.
func (s XSem) Release(ctx context.Context, rdb redis.Scripter, id, req, self string) (held bool, own int64, err error) {
	v, err := xsemRelease.Run(ctx, rdb, s.keys(), s.args(id, req, self)...)
	r, err := decode(v, err, func(v any) ([]int64, error) { return ints(v, 1) })
	if len(r) == 0 || r[0] != 1 {
		return false, 0, err
	}
	if len(r) > 2 {
		own = r[2]
	}
	return true, own, err
}

// Extend sets the permit id's lease to end lease from now, if it is held,
// and fixes it: the watchdog's renewals leave it be from then on, and so
// does a copy of an Extend of the permit by the same handle numbered up to
// req (a request id the handle made in its turn).
func (s XSem) Extend(ctx context.Context, rdb redis.Scripter, req, id string, lease time.Duration) (bool, error) {
	v, err := xsemExtend.Run(ctx, rdb, s.keys(), s.args(id, lease.Milliseconds(), "fix", req)...)
	return decode(v, err, isOne)
}

// Renewal returns the watchdog's renewal of the permit id: the script, its
// keys and its arguments. It replies 1 without renewing a permit that Extend
// has fixed, so a renewal sent before Extend cannot undo it.
func (s XSem) Renewal(id string, ttl time.Duration) (*redis.Script, []string, []any) {
	return xsemExtend.Script, s.keys(), s.args(id, ttl.Milliseconds(), "renew")
}

// Leave undoes the acquire of the permit id, when its caller gave up; a
// late copy of it is refused from then on. registered says the request
// waited through the waiter registry (SemRegister): a registration found
// gone was then woken, and the wake is passed on. others is how many other
// blocked acquires of the name its Client has: 0 takes the Client out of
// the registry; more, or SemUnregistered, leaves it be. heartbeat is what
// the tries of id sent. It reports whether a permit was given back.
func (s XSem) Leave(ctx context.Context, rdb redis.Scripter, id string, registered bool, heartbeat time.Duration,
	others int64) (bool, error) {
	last := "1"
	switch {
	case others == 0:
		last = "0"
	case others < 0:
		last = "-"
	}
	v, err := xsemLeave.Run(ctx, rdb, s.keys(), s.args(id, flag(registered), heartbeat.Milliseconds(), last)...)
	if err != nil {
		return false, err
	}
	n, err := integer(v)
	return n == 1, err
}

// Set sets up or resizes the semaphore (mode: SetIfUnset, SetTotal or
// AddTotal) under the request id req, as Sem.Set does, and wakes the
// waiters new permits let in. Available in the result is the free permits.
func (s XSem) Set(ctx context.Context, rdb redis.Scripter, req, mode string, n int64) (SetResult, error) {
	return set(ctx, rdb, xsemSet, s.keys(), s.args(mode, n, req), n)
}

// XState is what xsem_state reads.
type XState struct {
	Set         bool  // the permits were set
	Total, Held int64 // Held: permits whose lease has not ended
}

// State reads the semaphore.
func (s XSem) State(ctx context.Context, rdb redis.Scripter) (XState, error) {
	v, err := xsemState.Run(ctx, rdb, s.keys(), s.args()...)
	if err != nil {
		return XState{}, err
	}
	r, err := ints(v, 3)
	if err != nil {
		return XState{}, err
	}
	return XState{Set: r[0] == 1, Total: r[1], Held: r[2]}, nil
}
