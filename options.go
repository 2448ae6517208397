package redcoord

import (
	"log/slog"
	"strings"
	"time"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
)

// Option configures a Client. An option given a bad value makes New fail
// with an ErrInvalidArgument that names it.
type Option func(*options) error

type options struct{ core.Config }

func defaults() options {
	return options{Config: core.Config{
		TTL:          30 * time.Second,
		Prefix:       "rc",
		PollInterval: time.Second,
		Logger:       slog.Default(),
	}}
}

// WithLeaseTTL sets the lease of holds taken without a fixed lease and of
// waiter heartbeats. The watchdog renews them every ttl/3; a process that
// dies keeps a lock at most ttl. It must be at least 30ms. The default is 30s.
func WithLeaseTTL(ttl time.Duration) Option {
	return func(o *options) error {
		if ttl < 30*time.Millisecond {
			return errs.Invalid("WithLeaseTTL", "must be at least 30ms, got %v", ttl)
		}
		o.TTL = ttl.Truncate(time.Millisecond)
		return nil
	}
}

// WithPrefix sets the prefix of every key and channel: "<prefix>:{<name>}:lock".
// It must be non-empty and contain no brace. The default is "rc".
func WithPrefix(prefix string) Option {
	return func(o *options) error {
		if prefix == "" || strings.ContainsAny(prefix, "{}") {
			return errs.Invalid("WithPrefix", "must be non-empty and contain no brace, got %q", prefix)
		}
		o.Prefix = prefix
		return nil
	}
}

// WithPolling makes waiters poll every interval instead of subscribing, as
// spin-wait locks do; use it where pub/sub is unavailable, or to compare.
// The default is pub/sub, with automatic fallback to polling when the server
// refuses SUBSCRIBE.
func WithPolling(interval time.Duration) Option {
	return func(o *options) error {
		if interval <= 0 {
			return errs.Invalid("WithPolling", "interval must be > 0, got %v", interval)
		}
		o.Polling = true
		o.PollInterval = interval
		return nil
	}
}

// WithMaxPollInterval bounds the wait between two checks of a subscribed
// waiter, and so the cost of a lost notification (a reconnect, a failover).
// A waiter also re-checks when the blocker's lease runs out, if sooner. It
// must be > 0. The default is 1s.
func WithMaxPollInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errs.Invalid("WithMaxPollInterval", "must be > 0, got %v", d)
		}
		o.PollInterval = d
		return nil
	}
}

// WithLogger sets where the Client logs lost leases, refused subscriptions,
// failed clean-ups and a server whose eviction policy can delete leases. A
// nil logger is an error. The default is slog.Default() as it is when New
// is called; slog.New(slog.DiscardHandler) silences the Client.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errs.Invalid("WithLogger", "must not be nil")
		}
		o.Logger = l
		return nil
	}
}

// WithWaitReplicas makes every acquire and release wait until n replicas
// have acknowledged its write, for at most timeout: the script and
// "WAIT n timeout" go in one pipeline on one connection to the primary (of
// the name's slot, on Cluster), so it costs no extra round trip, only the
// time the replicas take to acknowledge, and Redis a small script more per
// call (the cover described below: an HGET and an HSET).
//
// An acquire that fewer replicas acknowledge is undone at once, as a wait
// that ends is (the lock stays free, the permits available, the queue as it
// was), and returns an error matching both ErrNotReplicated and
// ErrNotAcquired; a blocking acquire returns it rather than wait on. A
// release that fewer replicas acknowledge cannot be undone: it stands, and
// returns an error matching ErrNotReplicated, not ErrNotHeld; do not repeat
// it. WAIT covers every write made before it, not only the script's: the
// pipeline rewrites the kind field of the primitive's hash in between (a
// write that changes nothing), so that an acquire that finds its hold
// already there (go-redis sent it again after a lost reply, or a release
// granted it) waits for the replicas to have it too; if that write fails
// (out of memory), the call is a shortfall. A lock or permits
// handed over inside a release's script (rfairlock, a Semaphore WithFair)
// and announced by a message cost the waiter that receives them one round
// trip more: a write of its own with WAIT, since the releaser's WAIT is no
// promise to the waiter. An ExpirableSemaphore's Extend waits too; its new
// lease stands on a shortfall, as a release does.
//
// The watchdog's renewals of holds wait as well: each primary's renewal
// pipeline ends with one WAIT per tick, and a renewal counts only once
// acknowledged. A hold whose renewals go unacknowledged for a lease TTL
// (a replica down or lagging that long) is reported lost (Lost closes) at
// the moment a replica promoted then would expire it, though the primary
// may still have it; Unlock then releases it there. Waiters' heartbeats,
// ForceUnlock, SetPermits, AddPermits and Drain do not wait.
//
// This narrows the window in which a failover loses an acquire that was
// acknowledged, but does not close it: see Replication and failover in the
// package documentation. Fencing tokens are the defence.
//
// n must be at least 1 and timeout more than 0 (WAIT with a timeout of 0
// blocks forever; every wait here is bounded). timeout is truncated to
// whole milliseconds, and is at least 1ms; it must be under a third of the
// lease TTL (the watchdog's renewal interval), and keep it well under the
// go-redis client's ReadTimeout (3s by default), which bounds the read of
// the pipeline's replies. A server without replicas (miniredis has none)
// acknowledges nothing, and every acquire fails. On Cluster, pass the
// *redis.ClusterClient itself (or a wrapper that keeps its MasterForKey
// and ForEachShard methods). The default is no WAIT.
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(o *options) error {
		switch {
		case n < 1:
			return errs.Invalid("WithWaitReplicas", "n must be at least 1, got %d", n)
		case timeout <= 0:
			return errs.Invalid("WithWaitReplicas", "timeout must be > 0 (WAIT 0 blocks forever), got %v", timeout)
		}
		o.Replicas = core.Replicas{N: n, Timeout: max(timeout.Truncate(time.Millisecond), time.Millisecond)}
		return nil
	}
}
