package redcoord

import "context"

// Locker is what every exclusive lock of redcoord shares, as sync.Locker
// is for Go's: rlock.Mutex, rfairlock.Mutex, rlock.MultiMutex,
// rlock.RedLock, the write side of rrwlock.RWMutex, and its read side
// through RLocker. The contracts below are written once, here; each
// method's documentation adds only what its kind does differently.
//
// # Sharing a handle
//
// A handle is one owner in Redis, and goroutines that share it exclude
// each other as they would with a sync.Mutex: a Lock on a handle whose
// hold another call took waits until that hold ends (released by its last
// Unlock, lost, or ended by the Client's Close), in this process, without
// a request to Redis, then acquires as any owner does; a TryLock finds it
// held and returns (false, nil) at once. Redisson keys ownership to the
// thread; Go has no thread ids, so the context carries the identity
// instead: a Lock whose ctx descends from the current hold's Context
// re-enters that hold (its count goes up by one, and as many Unlocks
// release it). A ctx from a hold that has ended is done, and an acquire
// with it returns its error. Unlock releases the handle's hold whichever
// goroutine calls it, as sync.Mutex's does; so once Lost has closed, the
// goroutine whose hold it was must not Unlock after another goroutine
// sharing the handle may have locked it afresh.
//
// # Lost
//
// Lost returns a channel closed when the handle's most recent fresh hold
// is found gone: its lease ran out before it was renewed, it was deleted
// (ForceUnlock, eviction, a restart without persistence), or its fixed
// lease ended (see Loss in the package documentation). It stays open when
// the hold is released by Unlock. Take it after Lock returns; before the
// first hold it never closes. From then on Unlock returns an error
// matching ErrLeaseLost (and ErrNotHeld), deleting what Redis may still
// have of the hold, until the handle takes a fresh hold.
//
// # Context
//
// Context returns a copy of parent that is cancelled when the handle's
// current hold ends, so that the work it guards stops with it: when the
// hold is lost (the cause matches ErrLeaseLost and names the lock), released
// by the Unlock that drops the last re-entry (ErrNotHeld), or no longer
// kept once the Client is closed (ErrClosed), before the call that ended it
// returns; at once, with ErrNotHeld, when the handle holds nothing. The
// last Unlock cancels it as it sends the release, before Redis may give
// the name to another, whether or not the release then succeeds: Unlock
// again releases what a failed one left. A Lock with it, or with a context
// derived from it, re-enters the hold (see Sharing a handle). Call the
// CancelFunc when the work is done.
//
// # Extend
//
// Extend (on the kinds that have it) gives the handle's hold a fixed lease
// that ends lease (at least 1ms) from now, in one round trip per server, as
// redsync's Extend and redislock's Refresh do: the watchdog no longer
// renews it, and Lost closes when it ends. A hold that already ended is
// ErrLeaseLost (matching ErrNotHeld); a handle that holds nothing gets
// ErrNotHeld. An Extend that fails otherwise than with ErrWrongType (a
// timeout, a dropped connection) may have set the lease: the hold is
// renewed as before, but Lost closes when that lease would end unless a
// later Extend succeeds.
//
// # Forget
//
// Forget (rlock, rfairlock, rrwlock) deletes the name's fencing-token
// counter once the name is no longer used (it otherwise expires a day after
// the last token), and reports whether it deleted it. It does nothing while
// the name is in use or the counter is ahead of the server's clock: see
// Fencing tokens in the package documentation.
//
// # Token
//
// Token returns the fencing token of the handle's current hold, 0 when it
// holds none. Tokens strictly increase across all holders of a name: pass
// the token to a store that rejects writes with a token lower than the
// highest it has seen, and a holder paused past its lease cannot overwrite
// its successor's work (see Fencing tokens in the package documentation).
//
// # Releases
//
// A done ctx does not stop Unlock, and one that fails leaves the hold to
// end with its lease: see Releases in the package documentation.
type Locker interface {
	// Lock blocks until the handle holds the lock or ctx is done; a wait
	// that ends returns an error matching ErrNotAcquired and ctx.Err().
	Lock(ctx context.Context) error
	// TryLock makes one attempt and never waits: a lock held by another
	// owner, or by another call on the handle, is (false, nil).
	TryLock(ctx context.Context) (bool, error)
	// Unlock releases one hold; a handle that holds nothing gets
	// ErrNotHeld.
	Unlock(ctx context.Context) error
	// Lost: see Lost above.
	Lost() <-chan struct{}
	// Context: see Context above.
	Context(parent context.Context) (context.Context, context.CancelFunc)
}
