// Package core is the state one redcoord.Client shares with every primitive
// built on it: the Redis connection, the client id, key naming, the lazily
// started pub/sub Hub and watchdog, and the closed signal. Package redcoord
// wraps it; primitives reach it through Of.
package core

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/obs"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Redis is what the library needs of a go-redis client. *redis.Client (also
// as a Sentinel failover client) and *redis.ClusterClient satisfy it.
type Redis interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipeline() redis.Pipeliner
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Config is the validated configuration of a Session.
type Config struct {
	TTL          time.Duration // lease of watchdog-renewed holds and waiter heartbeats
	Prefix       string        // key prefix
	Polling      bool          // true: never subscribe, re-check every PollInterval
	PollInterval time.Duration // the longest wait between re-checks
	Logger       *slog.Logger
	Replicas     Replicas // WAIT after each acquire and release; zero: none
	Observer     obs.Func // nil: none
}

// Session is one Client's shared state. Its zero value is not usable; use New.
type Session struct {
	RDB      Redis
	ID       string // 128 random bits, hex; a test that must replay exactly sets its own before first use
	Config   Config
	Watchdog *lease.Watchdog
	Notices  *Notices // ends holds that another Client forced out
	// ClientWaits are the Client's blocked acquires per waiter registry,
	// which share one registration (see ClientWaiter).
	ClientWaits ClientWaits

	// Jitter draws a random duration in [0, n) for a back-off; nil: from
	// math/rand/v2. Tests that must replay exactly set it before first use.
	Jitter func(n time.Duration) time.Duration

	host string // for holder metadata
	pid  int
	// renewed is the lease argument of a hold the watchdog renews, for a
	// handle with no value (see RenewedLease), made once.
	renewed scripts.LeaseArg
	// notices is the channel of forced-unlock notices outside Cluster,
	// without the Client's id (see NoticePrefix), made once.
	notices string

	seq    atomic.Uint64 // handle sequence: owner ids are ID:seq
	closed atomic.Bool
	done   chan struct{} // closed by Close

	hubMu sync.Mutex // guards hub
	hub   *hub.Hub   // created on the first wait that subscribes
	// hubFunc is s.Hub as a func value, made once: Wait hands it to every
	// acquire without making (and allocating) a method value each time.
	hubFunc func() (*hub.Hub, error)

	checkOnce sync.Once      // starts checkServer's goroutine
	checks    sync.WaitGroup // that goroutine and the Notices' listener, for Close
	ctx       context.Context
	cancel    context.CancelFunc // called by Close: ends the check
}

// New returns a Session; it does no I/O.
func New(rdb Redis, cfg Config) (*Session, error) {
	var id [16]byte
	if _, err := crand.Read(id[:]); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	ctx, cancel := context.WithCancel(context.Background())
	replicas := lease.Replicas{N: cfg.Replicas.N, Timeout: cfg.Replicas.Timeout}
	s := &Session{
		ctx:      ctx,
		cancel:   cancel,
		host:     host,
		pid:      os.Getpid(),
		RDB:      rdb,
		ID:       hex.EncodeToString(id[:]),
		Config:   cfg,
		Watchdog: lease.New(rdb, cfg.TTL, cfg.Logger, replicas, cfg.Observer),
		done:     make(chan struct{}),
	}
	s.hubFunc = s.Hub
	s.Notices = newNotices(s)
	s.renewed = scripts.NewLeaseArg(cfg.TTL, s.EncodeMeta(cfg.TTL, false, ""))
	s.notices = s.ClientKey(ChanNotices, "")
	return s, nil
}

// Rand returns a random duration in [0, n), n > 0, from Jitter if set.
func (s *Session) Rand(n time.Duration) time.Duration {
	if s.Jitter != nil {
		return s.Jitter(n)
	}
	return rand.N(n)
}

// NewOwner returns a fresh owner id, "<client id>:<sequence>".
func (s *Session) NewOwner() string {
	return s.ID + ":" + strconv.FormatUint(s.seq.Add(1), 10)
}

// Channel returns the notification channel of a name.
func (s *Session) Channel(name string) string { return s.Key(name, ChanName) }

// ClientChannel returns this Client's channel for name: the name's channel
// and the Client's id, in the name's slot. A script that knows which
// waiter to wake publishes there, and only that Client's Hub hears it.
func (s *Session) ClientChannel(name string) string { return s.KeyTail(name, ChanNameClient, s.ID) }

// Woken reports whether this Session's waiters are woken by pub/sub: it
// does not poll (WithPolling), and its Hub can subscribe (the server has
// not refused, the connection has not just failed). A waiter that
// registers to be woken (an unfair lock's registry) must be one that
// listens; one whose own subscription fails after that costs the others a
// lost wake, bounded by their poll interval.
func (s *Session) Woken() bool {
	if s.Config.Polling {
		return false
	}
	s.hubMu.Lock()
	h := s.hub
	s.hubMu.Unlock()
	return h == nil || !h.Polls()
}

// Cluster reports whether the Session's Redis is a Cluster, whose keys
// one script touches must share a slot.
func (s *Session) Cluster() bool { return s.PublishCommand() == "SPUBLISH" }

// PublishCommand is the command scripts notify with: SPUBLISH on Cluster,
// where the Hub subscribes per shard, PUBLISH otherwise.
func (s *Session) PublishCommand() string { return hub.PublishCommand(s.RDB) }

// Err returns ErrClosed once Close has been called, nil before.
func (s *Session) Err() error {
	if s.closed.Load() {
		return errs.ErrClosed
	}
	return nil
}

// ReleaseContext returns the context a release is sent on: ctx's values
// without its cancellation or deadline, bounded by ReleaseTimeout (see
// "Releases" in package redcoord). A ctx that is never cancelled (its Done
// is nil, as context.Background's) is used as it is: the two contexts it
// would take cost an Unlock six allocations, a quarter of its own.
func (s *Session) ReleaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout(s.Config.TTL))
}

// ReleaseTimeout bounds a release for a lease TTL of ttl: a third of it
// (the watchdog's interval), and at least MinReleaseTimeout, so that a
// short lease still gives go-redis time to follow a failover.
func ReleaseTimeout(ttl time.Duration) time.Duration { return max(ttl/3, MinReleaseTimeout) }

// MinReleaseTimeout is the shortest bound of a release.
const MinReleaseTimeout = 5 * time.Second

// Check returns the first reason an operation must not start: a closed
// session or a done context.
func (s *Session) Check(ctx context.Context) error {
	if err := s.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &errs.Error{Cause: err}
	}
	s.checkServer()
	return nil
}

// Hub returns the Session's Hub, creating it on first use. It returns nil,
// nil when the Session polls.
func (s *Session) Hub() (*hub.Hub, error) {
	if s.Config.Polling {
		return nil, nil
	}
	s.hubMu.Lock()
	defer s.hubMu.Unlock()
	if s.closed.Load() {
		return nil, errs.ErrClosed
	}
	if s.hub == nil {
		h, err := hub.New(s.RDB, hub.WithLogger(s.Config.Logger), hub.WithObserver(s.Config.Observer),
			hub.WithPollInterval(s.Config.PollInterval),
			// A process whose one worker locks in a loop keeps its channel
			// subscribed between waits: no SUBSCRIBE, UNSUBSCRIBE or
			// confirmation wait per acquisition.
			hub.WithLinger(s.Config.PollInterval),
			hub.WithProbeChannel(s.ClientKey(ChanProbe, "")),
			// The server check warns of a refused SUBSCRIBE, once.
			hub.WithRefusalLevel(slog.LevelInfo),
			s.Notices.noticeOption())
		if err != nil {
			return nil, err
		}
		s.hub = h
	}
	return s.hub, nil
}

// Wait returns the wait-loop configuration for a primitive whose longest
// wait between re-checks is poll (0: the Session's).
func (s *Session) Wait(poll time.Duration) acquire.Config {
	if poll <= 0 {
		poll = s.Config.PollInterval
	}
	return acquire.Config{Hub: s.hubFunc, MaxPoll: poll, Done: s.done, Logger: s.Config.Logger, Observe: s.Config.Observer,
		Rand: s.Jitter}
}

// Close stops the watchdog and the Hub and waits for their goroutines. Holds
// are not released: they expire by lease. The watchdog's holds end first
// (their Lost closes), before the done signal, so that whoever wakes on
// done finds them ended. Calling Close again returns nil.
func (s *Session) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	s.Notices.close()
	s.Watchdog.Stop()
	close(s.done)
	s.checkOnce.Do(func() {}) // no check starts after Close
	err := s.Watchdog.Close(ctx)
	s.hubMu.Lock()
	h := s.hub
	s.hubMu.Unlock()
	if h != nil {
		err = errors.Join(err, h.Close(ctx))
	}
	// A check already running is a few commands per primary: it gets a
	// short grace to finish, so a Client closed right after its first
	// operation still warns, and is then cancelled, so a dead server cannot
	// hold Close up.
	// A listener of Notices still subscribing ends with the Hub's Close.
	checked := make(chan struct{})
	go func() { s.checks.Wait(); close(checked) }()
	grace := time.NewTimer(closeCheckGrace)
	defer grace.Stop()
	select {
	case <-checked:
	case <-grace.C:
	case <-ctx.Done():
	}
	s.cancel()
	select {
	case <-checked:
	case <-ctx.Done():
		err = errors.Join(err, ctx.Err())
	}
	return err
}
