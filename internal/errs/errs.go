// Package errs holds the sentinel errors shared by every package of the
// module. Package redcoord re-exports each of them under the same name, so
// users match them with errors.Is against redcoord.ErrX; internal packages
// that redcoord itself imports (pubsub, lease, wait) use them from here,
// which keeps the import graph free of cycles.
package errs

import "fmt"

var (
	// ErrNotAcquired: a lock or permit was not obtained (busy, or the wait ended).
	ErrNotAcquired = Sentinel("not acquired")
	// ErrNotHeld: a release or extension named a hold the caller does not have.
	ErrNotHeld = Sentinel("not held")
	// ErrLeaseLost: a hold the caller had was found gone (lease expired or deleted).
	ErrLeaseLost = Sentinel("lease lost")
	// ErrClosed: the Client (or its Hub) was closed.
	ErrClosed = Sentinel("client closed")
	// ErrInvalidArgument: an argument was out of range; the detail names it.
	ErrInvalidArgument = Sentinel("invalid argument")
	// ErrWrongType: a key holds data of another type or another primitive.
	ErrWrongType = Sentinel("key holds another type")
	// ErrNotReplicated: fewer replicas acknowledged a write than were required.
	ErrNotReplicated = Sentinel("not replicated")
	// ErrUpgrade: a read hold may not be upgraded to a write hold.
	ErrUpgrade = Sentinel("read lock cannot be upgraded")
	// ErrNotSet: a semaphore's permits, or a latch's count, were never set.
	ErrNotSet = Sentinel("not set")
	// ErrSubscribeRefused: the server refused SUBSCRIBE (an ACL, a proxy);
	// waits fall back to polling.
	ErrSubscribeRefused = Sentinel("subscribe refused")
	// ErrRefused: the server refused a command the library needs (an ACL,
	// a managed service); the message names the command (see Refused).
	ErrRefused = Sentinel("refused by the server")
)

// Invalid returns an ErrInvalidArgument that names the argument and what is
// wrong with it: "redcoord: invalid argument: lease: must be > 0, got -1s".
func Invalid(arg, format string, a ...any) error {
	return &Error{Sentinel: ErrInvalidArgument, Detail: arg + ": " + fmt.Sprintf(format, a...)}
}

// prefix begins every message of an Error or a sentinel.
const prefix = "redcoord: "

// Both returns an error that matches what (a sentinel: what did not
// happen) and why (the cause: a ctx error, a closed Client, a Redis error),
// worded with one "redcoord: " however many sentinels why wraps:
// "redcoord: not acquired: client closed", not "redcoord: not acquired:
// redcoord: client closed".
func Both(what, why error) error { return &Error{Sentinel: what, Cause: why} }

// Lost returns an error about what (see Tag) that matches both
// ErrLeaseLost and ErrNotHeld (a hold the caller had is gone, so it holds
// nothing), worded once: "redcoord: lease lost: rlock "orders:42": the hold
// expired before release".
func Lost(what, format string, a ...any) error {
	return &Error{Sentinel: ErrLeaseLost, Also: []error{ErrNotHeld}, Of: what, Detail: fmt.Sprintf(format, a...)}
}

// LostAcquire is Lost for an acquire that re-entered a hold found gone
// before its reply came: it matches ErrNotAcquired too.
func LostAcquire(what, format string, a ...any) error {
	return &Error{Sentinel: ErrLeaseLost, Also: []error{ErrNotHeld, ErrNotAcquired}, Of: what,
		Detail: fmt.Sprintf(format, a...)}
}
