package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/roundtrip"
)

// fleet is one cell's workers, spread over Clients: each its own go-redis
// client and, for redcoord, its own redcoord Client (watchdog, pub/sub
// connection), as one service would have, all in this process and all
// counted by one round-trip hook.
type fleet struct {
	clients []redis.UniversalClient
	procs   []process
	locks   []locker // one per worker
	names   int      // lock names the workers are spread over, from 1 to len(locks)
	trips   roundtrip.Counter
	base    int64 // pub/sub commands sent before the last reset
	// noscript is the backend's (see clientMicros); nil: no server time.
	noscript map[string]bool
	stats    commandStats // INFO commandstats at the last reset; nil: unread
}

// openFleet opens workers handles of ct, spread over min(names, workers)
// names made from key (see spreadKey), on min(procs, workers) Clients,
// prepares each name's primitive if it needs it (a semaphore's permits),
// and warms one handle on each Client and on each name so that
// scripts are loaded, on every server, before the clock starts. It resets
// the round trips and the server time.
func openFleet(ctx context.Context, b *backend, cfg *config, ct contender,
	workers, names, procs int, prefix, key string) (*fleet, error) {
	f := &fleet{locks: make([]locker, workers), names: min(names, workers), noscript: b.noscript}
	n := max(1, min(procs, workers))
	for p := range n {
		rdb := b.client(workers/n + 1)
		rdb.AddHook(&f.trips)
		rdb.AddHook(replyHook{})
		f.clients = append(f.clients, rdb)
		pr, err := ct.open(rdb, cfg, prefix)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: open: %w", ct.name, err), f.close())
		}
		f.procs = append(f.procs, pr)
		for w := p; w < workers; w += n {
			f.locks[w] = pr.handle(spreadKey(key, w, f.names))
		}
	}
	for w := range f.names { // worker w < names is the first on name w
		if pr, ok := f.locks[w].(preparer); ok {
			if err := pr.prepare(ctx); err != nil {
				return nil, errors.Join(fmt.Errorf("%s: prepare: %w", ct.name, err), f.close())
			}
		}
	}
	for p := range max(n, f.names) { // worker p < n is the first on Client p
		if err := warm(ctx, f.locks[p]); err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", ct.name, err), f.close())
		}
	}
	f.reset(ctx)
	return f, nil
}

// spreadKey returns the lock name of worker w when the workers are spread
// over names names: key itself for one name, else "<key>-<w % names>".
func spreadKey(key string, w, names int) string {
	if names == 1 {
		return key
	}
	return fmt.Sprintf("%s-%d", key, w%names)
}

// warm takes and releases lk once, and a read of it too if it is an
// rwLocker, so that the scripts of both are loaded.
func warm(ctx context.Context, lk locker) error {
	takes := []take{{lock: lk.Lock, unlock: lk.Unlock}}
	if rw, ok := lk.(rwLocker); ok {
		takes = append(takes, take{shared: true, lock: rw.RLock, unlock: rw.RUnlock})
	}
	for _, t := range takes {
		what := "lock"
		if t.shared {
			what = "read lock"
		}
		if err := t.lock(ctx); err != nil {
			return fmt.Errorf("first %s: %w", what, err)
		}
		uctx, cancel := unlockCtx()
		err := t.unlock(uctx)
		cancel()
		if err != nil {
			return fmt.Errorf("first %s: release: %w", what, err)
		}
	}
	return nil
}

// reset starts counting round trips and server time from zero.
func (f *fleet) reset(ctx context.Context) {
	f.trips.Reset()
	f.base = f.pubsub()
	f.stats = nil
	if f.noscript != nil {
		f.stats, _ = readCommandStats(roundtrip.Uncounted(ctx), f.clients[0])
	}
}

// cost is what a cell asked of Redis, read as it ended.
type cost struct {
	trips    int64 // see fleet.roundTrips
	serverUs int64 // see fleet.serverMicros; -1: unknown
}

// per returns the round trips and the server µs per one of n acquisitions
// (or orders): 0 and nil for none, and nil µs when the time is unknown.
func (c cost) per(n int64) (float64, *float64) {
	if n <= 0 {
		return 0, nil
	}
	trips := float64(c.trips) / float64(n)
	if c.serverUs < 0 {
		return trips, nil
	}
	us := float64(c.serverUs) / float64(n)
	return trips, &us
}

// cost returns the round trips and the server time since the last reset.
func (f *fleet) cost() cost {
	return cost{trips: f.roundTrips(), serverUs: f.serverMicros()}
}

// serverMicros returns the µs the server (every master of a cluster) spent
// on the fleet's commands since the last reset, from INFO commandstats (see
// clientMicros), or -1 when the server gives none. The commands of anyone
// else using the server count too.
func (f *fleet) serverMicros() int64 {
	if f.stats == nil {
		return -1
	}
	ctx, cancel := unlockCtx()
	defer cancel()
	now, err := readCommandStats(roundtrip.Uncounted(ctx), f.clients[0])
	if err != nil {
		return -1
	}
	return clientMicros(f.stats, now, f.noscript, f.trips.Commands)
}

// roundTrips returns the round trips since the last reset: commands and
// pipelines, and the SUBSCRIBE and UNSUBSCRIBE commands of the Clients'
// Hubs, which go-redis hooks do not see.
func (f *fleet) roundTrips() int64 {
	return f.trips.Load() + f.pubsub() - f.base
}

// pubsub returns the pub/sub commands the Clients have sent.
func (f *fleet) pubsub() int64 {
	var n int64
	for _, p := range f.procs {
		if p.pubsub != nil {
			n += p.pubsub()
		}
	}
	return n
}

// close ends every Client and closes its go-redis client; it waits at most 10s.
func (f *fleet) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, p := range f.procs {
		errs = append(errs, p.close(ctx))
	}
	for _, c := range f.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// client returns the go-redis client of worker w's Client.
func (f *fleet) client(w int) redis.UniversalClient {
	return f.clients[w%len(f.clients)]
}

// unlockCtx bounds an Unlock that runs after the cell's context is done.
func unlockCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}
