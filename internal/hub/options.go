package hub

import (
	"log/slog"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// DefaultProbeChannel is the channel a Hub subscribes to first, to learn
// whether the server accepts SUBSCRIBE at all. See WithProbeChannel.
const DefaultProbeChannel = "rc:hub:probe"

// Option configures a Hub.
type Option func(*options)

type options struct {
	logger         *slog.Logger
	pollInterval   time.Duration
	confirmTimeout time.Duration
	probe          string
	linger         time.Duration
	observe        obs.Func
	notice         func(string)
	refusalLevel   slog.Level
}

func defaultOptions() options {
	return options{
		logger:         slog.New(slog.DiscardHandler),
		pollInterval:   time.Second,
		confirmTimeout: 5 * time.Second,
		probe:          DefaultProbeChannel,
		refusalLevel:   slog.LevelWarn,
	}
}

func (o *options) validate() error {
	switch {
	case o.pollInterval <= 0:
		return errs.Invalid("poll interval", "must be > 0, got %v", o.pollInterval)
	case o.confirmTimeout <= 0:
		return errs.Invalid("confirm timeout", "must be > 0, got %v", o.confirmTimeout)
	case o.probe == "":
		return errs.Invalid("probe channel", "must not be empty")
	case o.linger < 0:
		return errs.Invalid("linger", "must be >= 0, got %v", o.linger)
	}
	return nil
}

// WithRefusalLevel sets the level at which the Hub logs that the server
// refused SUBSCRIBE or SSUBSCRIBE: an owner that warns of a refusal itself
// (a Client's server check) lowers it. The default is slog.LevelWarn.
func WithRefusalLevel(l slog.Level) Option {
	return func(o *options) { o.refusalLevel = l }
}

// WithLogger sets the logger for refusals, reconnects and failed UNSUBSCRIBEs.
// A nil logger discards. The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		o.logger = l
	}
}

// WithPollInterval sets how long Hub.Wait waits for a message before it
// re-checks its condition anyway. It must be > 0. The default is 1s.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) { o.pollInterval = d }
}

// WithLinger keeps a channel subscribed for d after its last waiter leaves,
// so that a waiter that comes back within d (a process whose one worker
// locks in a loop) finds it subscribed and confirmed: no SUBSCRIBE, no
// UNSUBSCRIBE, no wait for a confirmation. The default, 0, unsubscribes at
// once. It applies to SUBSCRIBE; sharded channels (Cluster) are
// unsubscribed at once.
func WithLinger(d time.Duration) Option {
	return func(o *options) { o.linger = d }
}

// WithNotice has the Hub pass the body of every notice ("!BODY", see
// "Messages" in the package documentation) to f, on whichever channel it
// comes, before it wakes the channel's waiters. f runs on a reader
// goroutine, without the Hub's lock: it must not block. nil drops notices.
// The default is nil.
func WithNotice(f func(body string)) Option {
	return func(o *options) { o.notice = f }
}

// WithConfirmTimeout sets how long Subscribe waits for the server to confirm
// a subscription before it gives up with ErrSubscribeRefused. It must be > 0.
// The default is 5s.
func WithConfirmTimeout(d time.Duration) Option {
	return func(o *options) { o.confirmTimeout = d }
}

// WithProbeChannel sets the channel the Hub subscribes to when it opens its
// connection, to detect a server that refuses SUBSCRIBE. The Hub stays
// subscribed to it for its whole life (it is also how reconnects are
// recognised), so an ACL that restricts channels must allow it. It must not
// be empty and cannot be used with Subscribe. The default is
// DefaultProbeChannel.
func WithProbeChannel(name string) Option {
	return func(o *options) { o.probe = name }
}

// WithObserver has the Hub report each reconnect to f (obs.HubReconnected,
// with the number of channels subscribed; on a Cluster, a shard connection
// lost) and each shard channel moved to another node (obs.HubMoved, with
// the channel as Name, when the new node confirms it). nil is no observer.
func WithObserver(f obs.Func) Option {
	return func(o *options) { o.observe = f }
}
