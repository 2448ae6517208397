// Package rlatch holds a countdown latch named in Redis, in the spirit of
// Java's CountDownLatch and Redisson's RCountDownLatch: one process sets a
// count, others count it down as their parts finish, and any number of
// waiters, in any processes, return when it reaches zero.
//
//	done := rlatch.New(c, "import-2026-11-25")
//	_, _ = done.TrySetCount(ctx, 3)  // once, by whoever coordinates
//	_ = done.CountDown(ctx)          // by each of the 3 workers, when finished
//	if err := done.Wait(ctx); err != nil { ... } // anyone: until the 3rd
//
// # Setting and counting down
//
// TrySetCount sets the count only if the latch was never set or has
// reached zero, so that two coordinators cannot both start it; a latch at
// zero starts a new round (unlike Java's CountDownLatch, as Redisson's
// does). CountDown takes one off; at zero it does nothing. Each call is one
// round trip. TrySetCount and CountDown carry a request id that Redis
// remembers for 15 seconds (longer with redcoord.WithWaitReplicas): a call
// that go-redis sends again after losing its reply is applied once, so a
// retried CountDown never counts twice. A CountDown retried by hand is a
// new one: after an error it is unknown whether the latch counted, except
// after ErrNotReplicated, which says it counted on the primary.
//
// # Waiting
//
// Wait returns at once for a latch at zero. Otherwise it checks the count
// once and sleeps on the Client's pub/sub Hub: the CountDown that brings
// the count to zero publishes one message on the latch's channel, naming
// the round that opened; each process with waiters hears it once and wakes
// all of them, and they return without another round trip. A waiter never
// polls Redis while it waits, but a timer (the poll interval,
// WithMaxPollInterval) bounds what a lost message costs. In BenchmarkOpen
// (64 waiters in 8 processes, one redis-server, 2 cores; three runs) the
// waiters returned 0.39-0.51ms after the call to the opening CountDown at
// the median and 0.62-0.90ms at the most, where one idle round trip took
// 28-78µs in the same runs: the message's way through 8 processes' Hubs
// and schedulers, on 2 cores.
//
// A wait is for the round it finds: if the CountDown that opens it is
// followed at once by a TrySetCount that starts the next round, the waiters
// of the round that opened still return (each round has a number that
// increases, and a round starts only at zero), and a round that was deleted
// gives its waiters ErrNotSet even if the latch was set again.
//
// Waiting on a latch whose count was never set is ErrNotSet at once, not a
// wait: a wait could not tell a latch about to be set from a misspelt name.
// A handle made WithWaitForSet waits for it instead, for workers that start
// before the coordinator: TrySetCount wakes it.
// A wait that ends with its context returns an error matching ctx.Err(),
// and one whose Client is closed ErrClosed; either leaves nothing behind
// in Redis (a waiter writes nothing there).
//
// # Keys and their lifetime
//
// For a name N and the Client's prefix P, a latch keeps P:{N}:latch (a
// hash: kind, count, round, spent TTL) and, for 15 seconds after each
// TrySetCount that sets and each CountDown that counts, its request id in
// P:{N}:latch-done; it notifies on the channel P:{N}:latch-ch. All share the
// {N} hash tag, so each script and the channel are in one Redis Cluster
// slot. A counting latch has no TTL: it waits for its CountDowns however
// long they take. A latch that reached zero expires its spent TTL later
// (WithSpentTTL, an hour by default, from the handle that set the count):
// until then a late Wait returns at once, after it Wait, Count and
// CountDown are ErrNotSet, as for a latch never set. Delete ends a latch at
// once (its waiters get ErrNotSet), leaving a tombstone for 15 seconds so
// that the next round's number is above the deleted one's; use it for a
// latch that will never reach zero.
//
// A latch and a lock or semaphore of the same name are separate objects: no
// key or channel of one is the other's. A latch key of another type, or a
// hash that another primitive wrote there, is ErrWrongType.
package rlatch
