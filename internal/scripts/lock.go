package scripts

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

// The lock-hash scripts, shared by every primitive whose exclusive hold is a
// lock hash (see lib.lua for its fields).
var (
	lockAcquire = load("lock_acquire")
	lockRelease = load("lock_release")
	lockLeave   = load("lock_leave")
	lockRenew   = load("lock_renew")
	lockForce   = load("lock_force")
	lockBeat    = load("lock_beat")
	lockState   = load("lock_state")
	lockForget  = load("lock_forget")
	lockExtend  = load("lock_extend")
)

// Lock names one lock hash and who acts on it.
type Lock struct {
	Hash, Fence string // keys: the lock hash (see lib.lua), the fencing-token counter
	Marks       string // key of the Client's request markers (see lib.lua): releases to zero, acquires given up
	Waiters     string // key of the waiter registry of an unfair lock (see lib.lua)
	Kind        string // the primitive's kind, checked against the hash's
	Owner       string
	Publish     string // PUBLISH or SPUBLISH
	Channel     string // the name's channel; a client's is Channel+":"+its id

	prep *prepared // by Prepared; nil: prepared on each call
}

// Prepared returns l with its acquire, release and renewals of leases of
// ttl prepared once (see prepared): the renewals send the owned arguments
// (ownedArgs) and ttl that the acquire and release send, and a lock kind
// with scripts of its own on the lock hash (Fair, RW) shares them. A Lock
// without a waiter registry is such a kind's, whose acquire and release
// are its own: its keys are not kept boxed.
func (l Lock) Prepared(ttl time.Duration) Lock {
	l.prep = prepare(l.keys(), l.ownedArgs(), ttl, nil)
	if l.Waiters == "" {
		l.prep.keys = nil
	}
	return l
}

// calls returns l's prepared calls, or prepares them with the ttl of
// MarkerTTL.
func (l Lock) calls() *prepared {
	if l.prep == nil {
		l = l.Prepared(MarkerTTL)
	}
	return l.prep
}

// args prepends the arguments every script of a primitive takes first
// (see lib.lua): kind, publish command, channel, and how long request
// markers live.
func (l Lock) args(more ...any) []any {
	return append([]any{constArg(l.Kind), constArg(l.Publish), l.Channel, markerMs}, more...)
}

// ownedArgs are args followed by the owner: the arguments every lock
// script that acts for one owner takes first.
func (l Lock) ownedArgs(more ...any) []any {
	return append([]any{constArg(l.Kind), constArg(l.Publish), l.Channel, markerMs, l.Owner}, more...)
}

// keys are the keys of lock_acquire and lock_release.
func (l Lock) keys() []string { return []string{l.Hash, l.Fence, l.Marks, l.Waiters} }

// LeaseArg is the lease and holder metadata an acquire sends, boxed once: a
// handle keeps the one of its watchdog-renewed holds.
type LeaseArg struct{ ms, meta any }

// NewLeaseArg returns the LeaseArg of an acquire for d with holder metadata meta.
func NewLeaseArg(d time.Duration, meta []byte) LeaseArg { return LeaseArg{d.Milliseconds(), meta} }

// TokenArg is the argument that names a hold by its token (NoToken: none):
// boxed once per hold, and sent by its re-entries and renewals. Redis gets
// it as the decimal string the scripts store.
func TokenArg(token uint64) any {
	if token == 0 {
		return NoToken
	}
	return int64(token)
}

// NoToken names no hold.
var NoToken any = "0"

// MarkerTTL is how long a release marker lets a retried final release be
// recognised, and a leave marker refuses a late copy of its request: longer
// than go-redis's retries of one command take at its default options: a
// retry follows the try that was applied by at most its read timeout (3 s),
// and each of MaxRetries 3 retries takes at most a backoff (512 ms) and its
// pool, dial, write and read timeouts (4+5+3+3 s), about 50 s in all. A
// Client's markers on a name share one key (see lib.lua), so a busy name
// costs one key per Client, holding the requests of the last MarkerTTL.
const MarkerTTL = 60 * time.Second

// Acquired is the reply of an acquire attempt.
type Acquired struct {
	OK    bool
	Token uint64        // the hold's fencing token, when OK
	Count int64         // the owner's hold count, when OK
	Wait  time.Duration // the blocker's remaining lease, when not OK
}

// Registry says what an unfair lock's acquire does with the waiter
// registry (see lib.lua) when the lock is busy: NoRegistry, Register or
// Unregister. Whatever it says, a request that takes the lock leaves the
// registry.
type Registry struct{ arg any }

var (
	// NoRegistry leaves the registry be: a try that never waits, or a
	// waiter that polls instead of being woken.
	NoRegistry = Registry{"0"}
	// Register registers the request's Client (by its id: one
	// registration per Client and name) as waiting when the lock is busy,
	// and unregisters it when the request takes the lock: the Client's
	// last local waiter.
	Register = Registry{"r"}
	// Keep is Register for a waiter with other local waiters behind it:
	// the Client stays registered, or registers again, when the request
	// takes the lock.
	Keep = Registry{"k"}
	// Unregister removes the request's Client from the registry, busy or
	// not: its waits' earlier tries registered it, and they can no longer
	// hear a wake.
	Unregister = Registry{"u"}
)

// Acquire takes the lock or re-enters the hold named by held (TokenArg);
// req makes a retried request a no-op. reg says what to do with the waiter
// registry; a registration lives the ttl the Lock was Prepared with
// (MarkerTTL if it was not) without a heartbeat (see Beat).
func (l Lock) Acquire(ctx context.Context, rdb redis.Scripter, req string, held any, lease LeaseArg,
	reg Registry) (Acquired, error) {
	c := l.calls()
	v, err := c.run(ctx, rdb, lockAcquire, req, lease.ms, lease.meta, held, reg.arg, c.ms(c.ttl))
	return decode(v, err, acquired)
}

// Beat returns the watchdog's renewal of Client client's registration in
// the waiter registry for ttl more: the script, its keys and its
// arguments. It replies 0 once the registration is gone (woken, lapsed,
// left or taken).
func (l Lock) Beat(client string, ttl time.Duration) (*redis.Script, []string, []any) {
	return lockBeat.Script, []string{l.Waiters}, l.args(client, ttl.Milliseconds())
}

// acquired decodes an acquire reply: {1, token, count} or {0, wait ms}.
func acquired(v any) (Acquired, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		return Acquired{}, errUnexpected(v)
	}
	first, ok1 := arr[0].(int64)
	second, ok2 := arr[1].(int64)
	if !ok1 || !ok2 {
		return Acquired{}, errUnexpected(v)
	}
	if first == 0 {
		return Acquired{Wait: time.Duration(second) * time.Millisecond}, nil
	}
	if len(arr) < 3 {
		return Acquired{}, errUnexpected(v)
	}
	count, ok := arr[2].(int64)
	if !ok {
		return Acquired{}, errUnexpected(v)
	}
	return Acquired{OK: true, Token: uint64(second), Count: count}, nil
}

// Release drops one hold (every hold of the owner if all) of the owner's
// hold whose token is named (TokenArg) and returns the remaining count;
// -1: not held (a hold of the owner with another token is left alone: a
// late copy of a release must not drop a hold taken since). wake, when not
// "", is the message a release to zero left for the releasing Client's own
// channel instead of publishing it (see Handed): the caller delivers it to
// its waiters.
func (l Lock) Release(ctx context.Context, rdb redis.Scripter, req string, all bool,
	named any) (n int64, wake string, err error) {
	v, err := l.calls().run(ctx, rdb, lockRelease, req, flag(all), named)
	h, err := decode(v, err, handed)
	return h.N, h.Wake, err
}

// Leave undoes the acquire request req if it was applied, and makes Redis
// refuse a copy of it that arrives later. keep leaves the Client's
// registration be: other local waiters remain (or it never registered);
// otherwise the Client leaves the registry, and a wake it got goes on to
// another registered Client. wake is as for Release: an undo that frees
// the lock wakes a registered waiter, who may be in the caller's Client.
func (l Lock) Leave(ctx context.Context, rdb redis.Scripter, req string,
	keep bool) (undone bool, wake string, err error) {
	v, err := lockLeave.Run(ctx, rdb, []string{l.Hash, l.Marks, l.Waiters}, l.ownedArgs(req, flag(keep))...)
	if err != nil {
		return false, "", err
	}
	h, err := handed(v)
	return h.N == 1, h.Wake, err
}

// Handed is the reply of a script that may wake a registered waiter (see
// wake_one in lib.lua): N, its integer reply, and Wake, when the waiter
// to wake is registered by the script's own Client, the message that
// Client's channel would have carried ("1", or "@<request> "), which the
// script did not publish: the Client hands it to its waiters itself, as
// if it had arrived (hub.Hub.Deliver). Wake is "" when the script
// published its wake, or woke no one.
type Handed struct {
	N    int64
	Wake string
}

// handed decodes an integer reply, or {N, wake} (see Handed).
func handed(v any) (Handed, error) {
	if n, ok := v.(int64); ok {
		return Handed{N: n}, nil
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return Handed{}, errUnexpected(v)
	}
	n, ok1 := arr[0].(int64)
	wake, ok2 := arr[1].(string)
	if !ok1 || !ok2 || wake == "" {
		return Handed{}, errUnexpected(v)
	}
	return Handed{N: n, Wake: wake}, nil
}

// Forced is the reply of a force: what it found.
type Forced int64

const (
	ForceFree  Forced = 0 // nothing was held
	ForceDone  Forced = 1 // the holds were ended
	ForceMoved Forced = 2 // held, and the fence changed since it was read: nothing changed
)

// Force, by request req, deletes the lock whoever holds it, provided the
// fence has not changed since the caller read upto, its last token (see
// fence_moved in lib.lua), and tells the holder's Client on its notice
// channel: notice, the prefix its id follows (see tell_forced). A copy of
// req replies as its first run did and changes nothing.
func (l Lock) Force(ctx context.Context, rdb redis.Scripter, notice, upto, req string) (Forced, error) {
	v, err := lockForce.Run(ctx, rdb, []string{l.Hash, l.Waiters, l.Fence, l.Marks}, l.args(notice, upto, req)...)
	return forced(v, err)
}

// forced decodes a force's reply.
func forced(v any, err error) (Forced, error) {
	if err != nil {
		return ForceFree, err
	}
	n, err := integer(v)
	if err == nil && (n < 0 || n > 2) {
		return ForceFree, errUnexpected(v)
	}
	return Forced(n), err
}

// LastToken reads the last token the fence handed out ("0": none), which
// Force is told.
func (l Lock) LastToken(ctx context.Context, rdb interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}) (string, error) {
	cmd := redis.NewStringCmd(ctx, "HGET", l.Fence, "n")
	if err := rdb.Process(ctx, cmd); err != nil && err != redis.Nil {
		if _, ok := wrongType(err); ok {
			return "", errs.New(errs.ErrWrongType, "key %s holds no hash", l.Fence)
		}
		return "", err
	}
	if cmd.Val() == "" {
		return "0", nil
	}
	return cmd.Val(), nil
}

// Renewal returns the watchdog's renewal of the owner's hold named by token
// (TokenArg): the script, its keys and its arguments. The script replies 1
// (renewed) or 0 (lost: the owner holds nothing, or another hold of its,
// which a late renewal of an earlier hold must not extend).
func (l Lock) Renewal(lease time.Duration, token any) (*redis.Script, []string, []any) {
	script, keys, args := l.RenewalShared(lease)
	return script, keys, append(args[:len(args):len(args)], token)
}

// RenewalShared is Renewal without the token, which follows args as the
// last argument: the script, its keys and every argument before the token,
// shared by every hold of the handle (prepared once; a caller must not
// change them).
func (l Lock) RenewalShared(lease time.Duration) (*redis.Script, []string, []any) {
	if c := l.prep; c != nil && c.ttl == lease {
		return lockRenew.Script, c.hash[:], c.args
	}
	return lockRenew.Script, []string{l.Hash}, l.ownedArgs(lease.Milliseconds())
}

// State is who holds a lock.
type State struct {
	Held       bool
	Owner      string
	Count      int64
	Token      uint64
	Meta       []byte
	AcquiredAt time.Time     // server time
	Remaining  time.Duration // the hold's remaining lease
}

// State reads who holds the lock.
func (l Lock) State(ctx context.Context, rdb redis.Scripter) (State, error) {
	v, err := lockState.Run(ctx, rdb, []string{l.Hash}, l.args()...)
	if err != nil {
		return State{}, err
	}
	arr, ok := v.([]any)
	if !ok {
		return State{}, errUnexpected(v)
	}
	if len(arr) == 0 {
		return State{}, nil
	}
	if len(arr) != 6 {
		return State{}, errUnexpected(v)
	}
	owner, ok1 := arr[0].(string)
	meta, ok2 := arr[3].(string)
	nums, err := ints([]any{arr[1], arr[2], arr[4], arr[5]}, 4)
	if !ok1 || !ok2 || err != nil {
		return State{}, errUnexpected(v)
	}
	return State{
		Held: true, Owner: owner, Count: nums[0], Token: uint64(nums[1]), Meta: []byte(meta),
		AcquiredAt: time.UnixMilli(nums[2]), Remaining: time.Duration(nums[3]) * time.Millisecond,
	}, nil
}

// lockScripts lists this file's scripts, for SHA.
var lockScripts = []*Script{
	lockAcquire, lockRelease, lockLeave, lockRenew, lockForce, lockState, lockBeat, lockForget, lockExtend,
}

// Extend gives the owner's hold named by token (TokenArg) a fixed lease,
// described by the holder metadata meta, and reports whether the owner
// held it. Renewals sent before it leave the fixed lease alone, and so
// does a copy of an Extend of the hold numbered up to req (a request id
// the handle made in its turn). A WAIT shortfall comes with the reply: the
// lease stands.
func (l Lock) Extend(ctx context.Context, rdb redis.Scripter, req string, lease time.Duration, token any,
	meta []byte) (bool, error) {
	v, err := lockExtend.Run(ctx, rdb, []string{l.Hash}, l.ownedArgs(lease.Milliseconds(), token, meta, req)...)
	return decode(v, err, isOne)
}

// Forget deletes the fence hash, unless any of the keys busy exists (the
// name is held or waited for) or the fence's last token is above the
// server's clock in microseconds, and reports whether it did. Every key
// must be in one slot.
func (l Lock) Forget(ctx context.Context, rdb redis.Scripter, busy []string) (bool, error) {
	v, err := lockForget.Run(ctx, rdb, append(append([]string{}, busy...), l.Fence), l.args(len(busy))...)
	if err != nil {
		return false, err
	}
	return isOne(v)
}

// flag is a boolean as a script argument, boxed once.
func flag(b bool) any {
	if b {
		return flagTrue
	}
	return flagFalse
}

var flagTrue, flagFalse any = "1", "0"
