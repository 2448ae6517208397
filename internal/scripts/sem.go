package scripts

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

// The counting semaphore's scripts: lib.lua, queue_lib.lua,
// sem_lib.lua, then the operation.
var (
	semAcquire   = loadSem("sem_acquire")
	semRelease   = loadSem("sem_release")
	semLeave     = loadSem("sem_leave")
	semHeartbeat = loadSem("sem_heartbeat")
	semBeat      = loadSem("sem_beat")
	semSet       = loadSem("sem_set")
	semDrain     = loadSem("sem_drain")
	semState     = loadSem("sem_state")
)

// semScripts lists this file's scripts, for SHA.
var semScripts = []*Script{semAcquire, semRelease, semLeave, semHeartbeat, semBeat, semSet, semDrain, semState}

func loadSem(name string) *Script {
	return loadWith(name, "queue_lib.lua", "sem_lib.lua")
}

// RequestTTL is how long a semaphore remembers that it applied a request,
// so that a retry or a late copy is not applied twice: longer than
// go-redis's retries of one command and the leave after a failed wait take
// together. Each remembered request costs about 100 bytes meanwhile.
const RequestTTL = 15 * time.Second

// MaxCount is the largest count of permits the scripts keep: 2^53 - 1, the
// largest integer a Lua number holds exactly.
const MaxCount = 1<<53 - 1

// Sem names one counting semaphore (see sem_lib.lua).
type Sem struct {
	Permits, Queue, Alive, Waiting, Done string // keys
	Waiters                              string // the registry of unfair waiters
	Sizes                                string // the same, by the permits each asks for
	// Drained + a request id is the key that keeps a Drain's reply.
	Drained                string
	Kind, Publish, Channel string
	// Marks is how long request markers live: RequestTTL when 0. It must
	// outlast a request's retries and the leave after it, WAIT's timeouts
	// (redcoord.WithWaitReplicas) included.
	Marks time.Duration
}

func (s Sem) keys() []string {
	return []string{s.Permits, s.Queue, s.Alive, s.Waiting, s.Done, s.Waiters, s.Sizes}
}

// args prepends the arguments every semaphore script takes.
func (s Sem) args(more ...any) []any {
	return append([]any{s.Kind, s.Publish, s.Channel, marks(s.Marks)}, more...)
}

// marks returns how long request markers live, in ms.
func marks(d time.Duration) int64 {
	if d <= 0 {
		d = RequestTTL
	}
	return d.Milliseconds()
}

// SemAttempt is the reply of an acquire attempt.
type SemAttempt struct {
	OK        bool
	Available int64 // permits available after it
}

// SemWait says what a semaphore acquire that does not take its permits
// does: SemTry, SemQueue, SemRegister (SemRegister.Behind), SemUnregister
// or SemPoll.
type SemWait struct {
	arg    string
	others int64 // SemRegister: the fewest the Client's other waiters ask for; 0: none
}

var (
	// SemTry neither queues nor registers: a TryAcquire, or a waiter that
	// polls.
	SemTry = SemWait{arg: "0"}
	// SemQueue joins the fair queue (once), which grants permits in order.
	SemQueue = SemWait{arg: "1"}
	// SemRegister registers the request's Client in the waiter registry,
	// so that a release whose permits fit wakes it (see sem_wake in
	// sem_lib.lua), and unregisters it when the request takes its permits:
	// the Client's only blocked acquire of the name (see Behind).
	SemRegister = SemWait{arg: "r"}
	// SemUnregister removes the request's Client from the waiter registry,
	// whether it takes the permits or not: a waiter whose wait can no
	// longer hear a wake.
	SemUnregister = SemWait{arg: "u"}
	// SemPoll neither queues nor registers: an unfair Acquire whose wait
	// polls from the start. Unlike SemTry, it waits, and so is refused
	// while fair waiters are queued (see Acquire).
	SemPoll = SemWait{arg: "p"}
)

// Behind returns w (SemRegister) for a request whose Client has other
// blocked acquires of the name, the fewest of them asking for least
// permits (0: none): the Client stays registered when the request takes
// its permits, for least at most.
func (w SemWait) Behind(least int64) SemWait {
	w.others = least
	return w
}

// Acquire takes n permits for the request req, all or nothing, or finds
// that req already has them (a retry, or a grant). When it does not, w says
// whether req joins the fair queue or the waiter registry, where it lives
// heartbeat from now without renewal (see Heartbeat and Beat). n beyond the
// total is ErrInvalidArgument; unset permits are ErrNotSet; a request that
// was given up is ErrNotAcquired. A waiting request (SemQueue, or
// SemRegister, SemUnregister, SemPoll) while waiters of the other kind
// wait is ErrInvalidArgument, naming its kind, and changes nothing.
func (s Sem) Acquire(ctx context.Context, rdb redis.Scripter, req string, n int64, w SemWait,
	heartbeat time.Duration) (SemAttempt, error) {
	v, err := semAcquire.Run(ctx, rdb, s.keys(), s.args(req, n, w.arg, heartbeat.Milliseconds(), w.others)...)
	return decode(v, err, func(v any) (SemAttempt, error) { return semAttempt(v, n) })
}

// semAttempt decodes an acquire's reply for n permits.
func semAttempt(v any, n int64) (SemAttempt, error) {
	r, err := ints(v, 1)
	if err != nil {
		return SemAttempt{}, err
	}
	switch {
	case r[0] == -1 && len(r) > 1:
		return SemAttempt{}, tooMany(n, r[1])
	case r[0] == -2:
		return SemAttempt{}, errs.ErrNotSet
	case r[0] == -3:
		return SemAttempt{}, errs.New(errs.ErrNotAcquired, "the request was given up")
	case r[0] == -4 && len(r) > 1 && r[1] == 1:
		return SemAttempt{}, mixed("unfair Acquire", "the name has WithFair waiters; use one kind of handle per name")
	case r[0] == -4 && len(r) > 1:
		return SemAttempt{}, mixed("WithFair", "the name has unfair waiters; use one kind of handle per name")
	case (r[0] == 0 || r[0] == 1) && len(r) > 1:
		return SemAttempt{OK: r[0] == 1, Available: r[1]}, nil
	}
	return SemAttempt{}, errUnexpected(v)
}

// semMixed marks Acquire's refusal of a waiting request while waiters of
// the other kind (fair or unfair) wait; the refused try wrote nothing. It
// is matched, never named in a message.
var semMixed = errs.Sentinel("mixed fair and unfair waiters")

// mixed is the refusal: an ErrInvalidArgument about arg that matches
// semMixed.
func mixed(arg, detail string) error {
	return &errs.Error{Sentinel: errs.ErrInvalidArgument, Also: []error{semMixed}, Detail: arg + ": " + detail}
}

// IsSemMixed reports whether err is Acquire's refusal of a waiting request
// beside waiters of the other kind, which wrote nothing.
func IsSemMixed(err error) bool { return errors.Is(err, semMixed) }

func tooMany(n, total int64) error {
	return errs.Invalid("n", "%d permits exceed the semaphore's total of %d: they could never be acquired", n, total)
}

// ParseSemGrant reports whether payload is a grant message of the fair
// queue ("granted", see sem_serve in sem_lib.lua).
func ParseSemGrant(payload string) bool { return payload == "granted" }

// Release returns n permits under the request id req and reports how many
// are available after it. A release that would make available exceed the
// total (more released than acquired) is ErrNotHeld and changes nothing.
// self, when not "", is the releasing Client's id: it hands the permits on
// to its own blocked acquires, and the script wakes no one for them; Own
// is then what a wake of it would have said ("n:<Own>"), 0 when the
// registry does not count it (not registered, or nothing fits).
func (s Sem) Release(ctx context.Context, rdb redis.Scripter, req string, n int64, self string) (SemReleased, error) {
	v, err := semRelease.Run(ctx, rdb, s.keys(), s.args(req, n, self)...)
	return decode(v, err, func(v any) (SemReleased, error) { return semReleased(v, n) })
}

// SemReleased is the reply of a release.
type SemReleased struct {
	Available int64 // permits available after it
	Own       int64 // the permits handed on to the releasing Client's waiters (see Release)
	// Retried: an earlier copy of the request was applied (a retry after
	// a lost reply), and what it handed on is not known.
	Retried bool
}

// semReleased decodes a release's reply for n permits.
func semReleased(v any, n int64) (SemReleased, error) {
	r, err := ints(v, 1)
	switch {
	case err != nil:
		return SemReleased{}, err
	case r[0] == 1 && len(r) > 2:
		return SemReleased{Available: r[1], Own: r[2]}, nil
	case r[0] == 1 && len(r) > 1:
		return SemReleased{Available: r[1], Retried: true}, nil
	case r[0] == -1 && len(r) > 2:
		return SemReleased{}, errs.New(errs.ErrNotHeld,
			"releasing %d permits would make %d available, over the total of %d: "+
				"more released than acquired",
			n, r[1]+n, r[2])
	case r[0] == -2:
		return SemReleased{}, errs.ErrNotSet
	}
	return SemReleased{}, errUnexpected(v)
}

// SemUnregistered is the others of a Leave of an acquire that did not
// wait through the waiter registry (WithFair, polling, TryAcquire): it
// leaves the registry be.
const SemUnregistered = -1

// SemLeft is what a Leave did.
type SemLeft struct {
	GaveBack bool // permits the request took or was granted were given back
	// Kept > 0: the request's Client was woken, the wake may have been
	// the request's, and the Client keeps it for its other blocked
	// acquires, one of which fits in the Kept permits available: those
	// that fit are to be woken, as "n:<Kept>" would wake them.
	Kept int64
}

// Leave undoes what the acquire request req (for n permits) did: its queue
// entry or registration, or the permits it took or was granted. registered
// says the request waited through the waiter registry (SemRegister): a
// registration found gone was then woken, and the wake is kept for the
// Client's other blocked acquires when one fits what is available (Kept),
// or else passed on to other Clients. others is the fewest permits its
// Client's other blocked acquires of the name ask for, which the
// registration says from now on; 0 (none) takes the Client out of the
// registry; SemUnregistered leaves it be. heartbeat is what the tries of
// req sent.
func (s Sem) Leave(ctx context.Context, rdb redis.Scripter, req string, n int64, registered bool,
	heartbeat time.Duration, others int64) (SemLeft, error) {
	reg := "0"
	if registered {
		reg = "1"
	}
	least := strconv.FormatInt(others, 10)
	if others < 0 {
		least = "-"
	}
	v, err := semLeave.Run(ctx, rdb, s.keys(), s.args(req, n, reg, heartbeat.Milliseconds(), least)...)
	if err != nil {
		return SemLeft{}, err
	}
	r, err := ints(v, 2)
	if err != nil {
		return SemLeft{}, err
	}
	return SemLeft{GaveBack: r[0] == 1, Kept: r[1]}, nil
}

// Heartbeat returns the watchdog's renewal of req's place in the fair
// queue: the script, its keys and its arguments.
func (s Sem) Heartbeat(req string, heartbeat time.Duration) (*redis.Script, []string, []any) {
	return semHeartbeat.Script, s.keys(), s.args(req, heartbeat.Milliseconds())
}

// Beat returns the watchdog's renewal of the Client client's registration
// in the waiter registry for ttl more: the script, its keys and its
// arguments. It replies 0 once the registration is gone (woken, lapsed,
// left or taken).
func (s Sem) Beat(client string, ttl time.Duration) (*redis.Script, []string, []any) {
	return semBeat.Script, s.keys(), s.args(client, ttl.Milliseconds())
}

// The modes of Set.
const (
	SetIfUnset = "try" // set the total only if it was never set
	SetTotal   = "set" // set the total; what is held stays held
	AddTotal   = "add" // add to the total (and to what is available)
)

// SetResult is the reply of Set.
type SetResult struct {
	Changed          bool // false: SetIfUnset found the permits set
	Total, Available int64
}

// Set sets up or resizes the semaphore (mode: SetIfUnset, SetTotal or
// AddTotal) under the request id req, then serves the queue and wakes the
// waiters new permits let in. An AddTotal that would make the total
// negative, or above MaxCount, is ErrInvalidArgument and changes nothing.
// A retry of req changes nothing and reports Changed.
func (s Sem) Set(ctx context.Context, rdb redis.Scripter, req, mode string, n int64) (SetResult, error) {
	return set(ctx, rdb, semSet, s.keys(), s.args(mode, n, req), n)
}

// set runs a set script of either semaphore and decodes its reply.
func set(ctx context.Context, rdb redis.Scripter, script *Script, keys []string, args []any,
	n int64) (SetResult, error) {
	v, err := script.Run(ctx, rdb, keys, args...)
	if err != nil {
		return SetResult{}, err
	}
	r, err := ints(v, 2)
	switch {
	case err != nil:
		return SetResult{}, err
	case r[0] == -1:
		return SetResult{}, errs.Invalid("delta", "%d would make the total of %d permits negative", n, r[1])
	case r[0] == -3:
		return SetResult{}, errs.Invalid("delta", "%d would make the total of %d permits exceed %d", n, r[1], int64(MaxCount))
	case len(r) < 3:
		return SetResult{}, errUnexpected(v)
	}
	return SetResult{Changed: r[0] == 1, Total: r[1], Available: r[2]}, nil
}

// Drain takes every available permit under the request id req and returns
// how many it took. A retry of req takes nothing and returns what req took.
func (s Sem) Drain(ctx context.Context, rdb redis.Scripter, req string) (int64, error) {
	v, err := semDrain.Run(ctx, rdb, append(s.keys(), s.Drained+req), s.args()...)
	if err != nil {
		return 0, err
	}
	r, err := ints(v, 1)
	switch {
	case err != nil:
		return 0, err
	case r[0] == -2:
		return 0, errs.ErrNotSet
	case len(r) < 2:
		return 0, errUnexpected(v)
	}
	return r[1], nil
}

// SemState is what sem_state reads.
type SemState struct {
	Set              bool  // the permits were set
	Available, Total int64 // 0 when not Set
	Waiting          int64 // live waiters in the fair queue
}

// State reads the semaphore.
func (s Sem) State(ctx context.Context, rdb redis.Scripter) (SemState, error) {
	v, err := semState.Run(ctx, rdb, s.keys(), s.args()...)
	if err != nil {
		return SemState{}, err
	}
	r, err := ints(v, 4)
	if err != nil {
		return SemState{}, err
	}
	return SemState{Set: r[0] == 1, Available: r[1], Total: r[2], Waiting: r[3]}, nil
}
