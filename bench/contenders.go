package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
	"github.com/redcoord/redcoord/rsemaphore"
)

// locker is one worker's handle on the contended lock.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// preparer is a locker whose primitive needs setting up once per cell,
// before the first Lock: a semaphore's permits.
type preparer interface {
	prepare(ctx context.Context) error
}

// contender is one lock implementation under test.
type contender struct {
	name  string
	about string // how it waits, for the table's legend
	// open prepares one Client on rdb, naming its keys under prefix.
	open func(rdb redis.UniversalClient, cfg *config, prefix string) (process, error)
}

// process is one contender's state on one Client of a cell: what one
// service's process would hold (the bench runs them all in its own).
type process struct {
	handle func(key string) locker         // a new worker's lock on key
	close  func(ctx context.Context) error // ends the Client's session, if any
	pubsub func() int64                    // SUBSCRIBE/UNSUBSCRIBE sent so far; nil: none
}

// contenders returns the mutex and seckill contenders cfg selects, in
// lockNames order.
func contenders(cfg *config) []contender { return named(cfg, cfg.locks) }

// named returns the contenders called names, set up as cfg says.
func named(cfg *config, names []string) []contender {
	all := map[string]contender{
		"rlock": {"rlock", "redcoord reentrant lock, woken by pub/sub",
			redcoordProcess(func(c *redcoord.Client, key string) locker { return rlock.New(c, key) })},
		"rlock-poll": {"rlock-poll", fmt.Sprintf("rlock WithPolling(%v): no pub/sub, retries on a timer", cfg.poll),
			redcoordProcess(func(c *redcoord.Client, key string) locker { return rlock.New(c, key) },
				redcoord.WithPolling(cfg.poll))},
		"rfairlock": {"rfairlock", "redcoord fair lock: FIFO queue, direct hand-off to the head",
			redcoordProcess(func(c *redcoord.Client, key string) locker { return rfairlock.New(c, key) })},
		"redsync": {"redsync", "go-redsync/redsync/v4 defaults: SET NX, 32 tries 50-250ms apart, 8s expiry",
			openRedsync},
		"redislock": {"redislock", fmt.Sprintf("bsm/redislock, LinearBackoff(%v)", cfg.poll),
			openRedislock},
		"rrwlock": {"rrwlock", "redcoord read-write lock: shared reads, writer preference, woken by pub/sub",
			redcoordProcess(func(c *redcoord.Client, key string) locker { return rrwlock.New(c, key) })},
		"rsemaphore": {"rsemaphore",
			"redcoord semaphore, unfair: a release wakes the waiters that fit, the first to Redis wins",
			redcoordProcess(func(c *redcoord.Client, key string) locker {
				return semLock{rsemaphore.New(c, key), int64(cfg.permits)}
			})},
		"rsemaphore-fair": {"rsemaphore-fair",
			"rsemaphore WithFair: a FIFO queue in Redis, permits granted inside the release script",
			redcoordProcess(func(c *redcoord.Client, key string) locker {
				return semLock{rsemaphore.New(c, key, rsemaphore.WithFair()), int64(cfg.permits)}
			})},
		"rsemaphore-expirable": {"rsemaphore-expirable",
			"rsemaphore ExpirableSemaphore: a lease and a fencing token per permit, released by id",
			redcoordProcess(func(c *redcoord.Client, key string) locker {
				return &xsemLock{s: rsemaphore.NewExpirable(c, key), permits: int64(cfg.permits)}
			})},
		"none": {"none", "no lock at all: the baseline that shows what oversell looks like",
			func(redis.UniversalClient, *config, string) (process, error) {
				return process{handle: func(string) locker { return noLock{} }, close: noClose}, nil
			}},
	}
	var out []contender
	for _, n := range names {
		out = append(out, all[n])
	}
	return out
}

// redcoordProcess opens one redcoord Client per Client of a cell.
func redcoordProcess(
	mk func(*redcoord.Client, string) locker, opts ...redcoord.Option,
) func(redis.UniversalClient, *config, string) (process, error) {
	return func(rdb redis.UniversalClient, cfg *config, prefix string) (process, error) {
		base := []redcoord.Option{redcoord.WithPrefix(prefix), redcoord.WithLogger(cfg.logger)}
		if cfg.observe != nil {
			base = append(base, redcoord.WithObserver(cfg.observe))
		}
		c, err := redcoord.New(rdb, append(base, opts...)...)
		if err != nil {
			return process{}, err
		}
		return process{
			handle: func(key string) locker { return mk(c, key) },
			close:  c.Close,
			pubsub: func() int64 {
				h, err := c.Hub()
				if err != nil || h == nil { // closed, or polling: no Hub
					return 0
				}
				return h.Stats().Commands
			},
		}, nil
	}
}

// openRedsync opens go-redsync/redsync with its defaults.
func openRedsync(rdb redis.UniversalClient, _ *config, prefix string) (process, error) {
	rs := redsync.New(goredis.NewPool(rdb))
	return process{
		handle: func(key string) locker { return redsyncLock{rs.NewMutex(prefix + ":" + key)} },
		close:  noClose,
	}, nil
}

// redsyncLock adapts a redsync.Mutex to locker.
type redsyncLock struct{ m *redsync.Mutex }

func (l redsyncLock) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }

func (l redsyncLock) Unlock(ctx context.Context) error {
	_, err := l.m.UnlockContext(ctx)
	return err
}

// openRedislock opens bsm/redislock, retrying every cfg.poll.
func openRedislock(rdb redis.UniversalClient, cfg *config, prefix string) (process, error) {
	c := redislock.New(rdb)
	return process{
		handle: func(key string) locker {
			return &redisLock{c: c, key: prefix + ":" + key, poll: cfg.poll}
		},
		close: noClose,
	}, nil
}

// redisLock holds a 30s lease, as long as redcoord's default, so it never
// expires under a hold; redislock has no watchdog to renew it.
type redisLock struct {
	c    *redislock.Client
	key  string
	poll time.Duration
	held *redislock.Lock
}

func (l *redisLock) Lock(ctx context.Context) error {
	lk, err := l.c.Obtain(ctx, l.key, 30*time.Second,
		&redislock.Options{RetryStrategy: redislock.LinearBackoff(l.poll)})
	if err != nil {
		return err
	}
	l.held = lk
	return nil
}

func (l *redisLock) Unlock(ctx context.Context) error {
	if l.held == nil {
		return redislock.ErrLockNotHeld
	}
	err := l.held.Release(ctx)
	l.held = nil
	return err
}

// noLock excludes nothing: seckill's baseline.
type noLock struct{}

func (noLock) Lock(context.Context) error   { return nil }
func (noLock) Unlock(context.Context) error { return nil }

// noClose is the close of a Client with no session of its own.
func noClose(context.Context) error { return nil }
