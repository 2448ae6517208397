package redcoord

import "github.com/redcoord/redcoord/internal/errs"

// Sentinel errors shared by every primitive; match them with errors.Is.
// Errors from Redis are wrapped with %w, never swallowed.
var (
	// ErrNotAcquired: a lock or permit was not obtained. A wait that ended
	// with its context also matches ctx.Err().
	ErrNotAcquired = errs.ErrNotAcquired
	// ErrNotHeld: a release named a hold the caller does not have.
	ErrNotHeld = errs.ErrNotHeld
	// ErrLeaseLost: a hold the caller had is gone (its lease expired, or it
	// was deleted). It also matches ErrNotHeld.
	ErrLeaseLost = errs.ErrLeaseLost
	// ErrClosed: the Client was closed.
	ErrClosed = errs.ErrClosed
	// ErrInvalidArgument: an argument was out of range; the message names it.
	ErrInvalidArgument = errs.ErrInvalidArgument
	// ErrWrongType: a key holds another type, or another primitive's data.
	ErrWrongType = errs.ErrWrongType
	// ErrNotReplicated: fewer replicas acknowledged a write than required.
	ErrNotReplicated = errs.ErrNotReplicated
	// ErrUpgrade: a read hold cannot be upgraded to a write hold.
	ErrUpgrade = errs.ErrUpgrade
	// ErrNotSet: a semaphore's permits were never set (TrySetPermits,
	// SetPermits or AddPermits), so an acquire could never succeed; or a
	// latch's count was never set (TrySetCount), or the latch was deleted
	// or expired after it reached zero, so a wait could never end.
	ErrNotSet = errs.ErrNotSet
	// ErrRefused: the server refused a command the library needs (an ACL
	// that denies it, a managed service that does not offer it). The
	// message names the command and the operation that failed, and the
	// server's reply is wrapped. docs/operating.md lists what the server
	// must allow.
	ErrRefused = errs.ErrRefused
)
