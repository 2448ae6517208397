package redcoord

import (
	"log/slog"
	"strings"
	"time"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
)

// Option configures a Client.
type Option func(*options)

type options struct {
	core.Config
	errs []error // invalid options, reported by New
}

func defaults() options {
	return options{Config: core.Config{
		TTL:          30 * time.Second,
		Prefix:       "rc",
		PollInterval: time.Second,
		Logger:       slog.New(slog.DiscardHandler),
	}}
}

func (o *options) invalid(err error) { o.errs = append(o.errs, err) }

// WithLeaseTTL sets the lease of holds taken without a fixed lease and of
// waiter heartbeats. The watchdog renews them every ttl/3; a process that
// dies keeps a lock at most ttl. It must be at least 30ms. The default is 30s.
func WithLeaseTTL(ttl time.Duration) Option {
	return func(o *options) {
		if ttl < 30*time.Millisecond {
			o.invalid(errs.Invalid("WithLeaseTTL", "must be at least 30ms, got %v", ttl))
			return
		}
		o.TTL = ttl.Truncate(time.Millisecond)
	}
}

// WithPrefix sets the prefix of every key and channel: "<prefix>:{<name>}:lock".
// It must be non-empty and contain no brace. The default is "rc".
func WithPrefix(prefix string) Option {
	return func(o *options) {
		if prefix == "" || strings.ContainsAny(prefix, "{}") {
			o.invalid(errs.Invalid("WithPrefix", "must be non-empty and contain no brace, got %q", prefix))
			return
		}
		o.Prefix = prefix
	}
}

// WithPolling makes waiters poll every interval instead of subscribing, as
// spin-wait locks do; use it where pub/sub is unavailable, or to compare.
// The default is pub/sub, with automatic fallback to polling when the server
// refuses SUBSCRIBE.
func WithPolling(interval time.Duration) Option {
	return func(o *options) {
		if interval <= 0 {
			o.invalid(errs.Invalid("WithPolling", "interval must be > 0, got %v", interval))
			return
		}
		o.Polling = true
		o.PollInterval = interval
	}
}

// WithMaxPollInterval bounds the wait between two checks of a subscribed
// waiter, and so the cost of a lost notification (a reconnect, a failover).
// A waiter also re-checks when the blocker's lease runs out, if sooner. It
// must be > 0. The default is 1s.
func WithMaxPollInterval(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid(errs.Invalid("WithMaxPollInterval", "must be > 0, got %v", d))
			return
		}
		o.PollInterval = d
	}
}

// WithLogger sets where the Client logs lost leases, refused subscriptions,
// failed clean-ups and a server whose eviction policy can delete leases. A
// nil logger is an error. The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.invalid(errs.Invalid("WithLogger", "must not be nil"))
			return
		}
		o.Logger = l
	}
}
