// Package errs holds the sentinel errors shared by every package of the
// module. Package redcoord re-exports each of them under the same name, so
// users match them with errors.Is against redcoord.ErrX; internal packages
// that redcoord itself imports (pubsub, lease, wait) use them from here,
// which keeps the import graph free of cycles.
package errs

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNotAcquired: a lock or permit was not obtained (busy, or the wait ended).
	ErrNotAcquired = errors.New("redcoord: not acquired")
	// ErrNotHeld: a release or extension named a hold the caller does not have.
	ErrNotHeld = errors.New("redcoord: not held")
	// ErrLeaseLost: a hold the caller had was found gone (lease expired or deleted).
	ErrLeaseLost = errors.New("redcoord: lease lost")
	// ErrClosed: the Client (or its Hub) was closed.
	ErrClosed = errors.New("redcoord: client closed")
	// ErrInvalidArgument: an argument was out of range; the detail names it.
	ErrInvalidArgument = errors.New("redcoord: invalid argument")
	// ErrWrongType: a key holds data of another type or another primitive.
	ErrWrongType = errors.New("redcoord: key holds another type")
	// ErrNotReplicated: fewer replicas acknowledged a write than were required.
	ErrNotReplicated = errors.New("redcoord: not replicated")
	// ErrUpgrade: a read hold may not be upgraded to a write hold.
	ErrUpgrade = errors.New("redcoord: read lock cannot be upgraded")
	// ErrNotSet: a semaphore's permits, or a latch's count, were never set.
	ErrNotSet = errors.New("redcoord: not set")
	// ErrSubscribeRefused: the server refused SUBSCRIBE (an ACL, a proxy);
	// waits fall back to polling.
	ErrSubscribeRefused = errors.New("redcoord: subscribe refused")
)

// Invalid returns an ErrInvalidArgument that names the argument and what is
// wrong with it: "redcoord: invalid argument: lease: must be > 0, got -1s".
func Invalid(arg, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidArgument, arg, fmt.Sprintf(format, a...))
}

// prefix begins every sentinel's message.
const prefix = "redcoord: "

// Both returns an error that matches what (a sentinel: what did not
// happen) and why (the cause: a ctx error, a closed Client, a Redis error),
// worded with one "redcoord: " however many sentinels why wraps:
// "redcoord: not acquired: client closed", not "redcoord: not acquired:
// redcoord: client closed".
func Both(what, why error) error {
	return &both{what: what, why: why}
}

type both struct{ what, why error }

func (e *both) Error() string {
	return e.what.Error() + ": " + strings.ReplaceAll(e.why.Error(), prefix, "")
}

// Unwrap returns both errors, for errors.Is and errors.As.
func (e *both) Unwrap() []error { return []error{e.what, e.why} }

// Lost returns an error that matches both ErrLeaseLost and ErrNotHeld (a
// hold the caller had is gone, so it holds nothing), worded once:
// "redcoord: lease lost: rlock "orders:42": the hold expired before release".
func Lost(format string, a ...any) error {
	return &lostError{msg: fmt.Sprintf(format, a...)}
}

// LostAcquire is Lost for an acquire that re-entered a hold found gone
// before its reply came: it matches ErrNotAcquired too.
func LostAcquire(format string, a ...any) error {
	return &lostError{msg: fmt.Sprintf(format, a...), acquire: true}
}

type lostError struct {
	msg     string
	acquire bool // also ErrNotAcquired
}

func (e *lostError) Error() string { return ErrLeaseLost.Error() + ": " + e.msg }

// Is matches ErrLeaseLost and ErrNotHeld, and ErrNotAcquired for LostAcquire.
func (e *lostError) Is(target error) bool {
	return target == ErrLeaseLost || target == ErrNotHeld || (e.acquire && target == ErrNotAcquired)
}
