// Package redcoord is a toolkit of distributed coordination primitives on
// Redis: a reentrant lock (package rlock), a fair, first-come-first-served
// one (package rfairlock), a read-write lock (package rrwlock),
// semaphores (package rsemaphore), a countdown latch (package rlatch) and
// leader election (package relection), built on one Client per process.
//
// Every state change is one atomic Lua script; waiters are woken by pub/sub
// instead of polling; one watchdog per Client keeps every held lease alive.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	c, err := redcoord.New(rdb)
//	...
//	defer c.Close(ctx)
//	mu := rlock.New(c, "orders:42")
//	if err := mu.Lock(ctx); err != nil { ... }
//	defer mu.Unlock(ctx)
//
// # Owners
//
// Go has no thread ids, and redcoord does not fake them: a handle is an
// owner. rlock.New returns a handle whose owner id is "<client id>:<n>";
// another handle, even in the same process, is another owner and waits.
// Goroutines that share one handle exclude each other as with a
// sync.Mutex, and re-enter its hold only with a context of it: Redisson
// keys ownership to the thread, and here the context carries the identity
// (see "Sharing a handle" at Locker, which also states the contracts every
// lock shares: Lost, Context, Extend, Forget, Token, releases).
//
// Owner ids alone cannot tell a handle's earlier hold from its next one,
// and a request may reach Redis late or twice (go-redis retries a command
// whose reply was lost; the watchdog, the Hub and the caller each have
// their own connection). So every request that changes a hold names it,
// by its token (an rrwlock read hold by the request that took it, an
// expirable permit by its id), and carries its number within the hold: a
// copy that arrives after the hold ended, or after a later request of the
// same hold, changes nothing and says so. docs/safety.md lists what each
// request carries.
//
// # Leases and the watchdog
//
// A hold taken without a fixed lease has the Client's lease TTL (30s by
// default, WithLeaseTTL), renewed every TTL/3 by the Client's watchdog, in one
// pipelined round trip per node for all holds. A process that dies holds a
// lock at most one TTL. A renewal that finds the hold gone closes the
// handle's Lost channel. Close stops the watchdog without releasing
// anything, and ends for their handles the holds it kept (see
// Client.Close).
//
// # Fencing tokens
//
// Every fresh hold gets a token that is above every token handed out
// before it on that name (re-entries keep theirs). A store that remembers
// the highest token it has seen and rejects lower ones is safe against a
// holder that was paused past its lease (a GC pause, a partition) and wakes
// believing it still holds the lock.
//
// A token is max(last token + 1, the Redis server's clock in microseconds),
// computed inside the acquire script. A counter alone would go back to 1
// when Redis restarts without persistence, and could hand out a token twice
// after a failover to a replica that missed the last increment or after a
// crash inside the AOF fsync window; the clock floor keeps tokens increasing
// across all of these, as long as the new server's clock is not behind the
// old server's by more than the time the outage took (seconds, where NTP
// keeps clocks within milliseconds). A server clock stepped back by more than
// that, at such a moment, could hand out a token below one already given; a
// clock stepped back while the counter survives changes nothing (last + 1
// wins). Tokens look like 1795593882766949 and stay below 2^53.
//
// The counter, P:{N}:fence, expires a day after the last token handed out
// from it (25 hours at most: its TTL is refreshed at most once an hour), so
// a name used once (orders:42) leaves no key behind for long; a token handed
// out after that is still floored by the clock.
//
// Forget (rlock, rfairlock, rrwlock) deletes the counter at once. It deletes
// nothing, and reports false, while a lock of any kind holds the name or
// has a waiter registered or queued for it, and while the counter's last
// token is above the server's clock in microseconds (a failover from a
// primary whose clock ran ahead): tokens after the counter is gone start
// again from the clock, which would then hand out tokens below the last.
// Owners' markers are not deleted: they expire by themselves within a
// minute.
//
// # Loss
//
// Loss has one meaning. A hold is lost when its lease ran out before it was
// renewed (the holder was paused or cut off), when a renewal finds it gone
// (ForceUnlock, eviction, a restart without persistence), or when its fixed
// lease ends. The clock reports it, not I/O: Lost closes a hundredth of the
// lease before the lease can end in Redis, counted from when the last
// acknowledged renewal (or the acquire) was sent, however long a renewal
// stuck on a dead connection takes to fail, whatever the go-redis client's
// timeouts are. The hundredth covers a difference in clock rates (NTP slews
// a clock by at most 0.05%) and the delay of the timer. A renewal stuck on
// a dead connection does not hold up the next ones, which go out on other
// connections, up to three at once: a lease TTL's worth. Give the go-redis
// client a ReadTimeout all the same (its default is 3s): with none, stuck
// requests hold their connections until the TCP keep-alive gives up, and
// three of them stop the renewals until then. Then, and only then, the
// handle's Lost channel closes (or when the Client's Close ends a hold no
// longer renewed), and from then on its Unlock returns an error matching
// ErrLeaseLost (and ErrNotHeld) until the handle takes a fresh hold. If Redis still has the
// hold when Unlock runs (a fixed lease ends by the holder's clock a little
// before Redis expires it), Unlock deletes it all the same and still
// returns ErrLeaseLost: the guarded work may have overlapped a successor's.
// A re-entry whose reply comes after its hold was found lost fails the
// same way, with an error that also matches ErrNotAcquired: a re-entry
// sets no lease, so it cannot be a fresh hold; it is given back.
//
// An Unlock that fails ends the hold within its lease: see Releases. An
// acquire whose reply was lost is undone by the leave script; if that fails too, the hold it left is no
// one's: the handle's next acquire takes it over as a fresh hold (a new
// token, a hold count of 1), so one Unlock frees it, and a copy of an
// acquire request that reaches Redis after its leave is refused.
//
// # Forced unlock
//
// ForceUnlock (rlock, rfairlock, rrwlock) reads the name's fence, then
// ends the holds there are provided the fence has not changed since (the
// holds it saw may have ended on their own: it then reports false and
// leaves the next holder alone); a copy of the force that lands again
// changes nothing (see docs/safety.md). It tells the Clients of the holds it ends, in the same
// script, and a Client that hears it ends them at
// once: Lost closes and the holds' contexts end with a cause that matches
// ErrLeaseLost and says they were forced, a round trip after the force
// rather than at the next renewal (up to a third of the lease later). The
// message names each hold's owner and token, so a late copy never ends a
// hold taken since. Where it is heard:
//
//   - One server, or a Sentinel failover client: on the Client's own
//     channel, "<prefix>:ch:<client id>", which the Client subscribes to
//     once, in the background, when it first takes a hold (its Hub's
//     connection, opened then if no wait opened it before): no acquire
//     waits for it. A hold forced before that subscription was confirmed
//     is found at its next renewal.
//   - Redis Cluster: a script publishes only within its slot, so the
//     message goes on the name's channel for the Client, which it listens
//     to only while it waits on that name; elsewhere the next renewal
//     finds the loss.
//   - WithPolling, or a server that refuses SUBSCRIBE: the next renewal.
//
// Pub/sub is fire-and-forget: a message lost to a reconnect leaves the
// loss to the next renewal, as before. A hold with a fixed lease
// (LockWithLease) is not renewed: without the message, its Lost closes
// when its lease ends.
//
// A fair lock's grant in flight is a hold like any other here: a waiter
// whose Client hears these messages takes the grant as it comes (see
// package rfairlock), so a ForceUnlock that ends the grant before its
// waiter has read it makes the waiter's Lock either fail with
// ErrLeaseLost (the message arrived first) or return and see Lost close
// as the message arrives, a read later on the same connection. Lock took
// effect at the grant, before the force, as an rlock Lock whose reply was
// on its way when the force came.
//
// # Waiting
//
// A blocked acquire subscribes to the name's channel through the Client's
// Hub (one connection for every waiter of the Client), re-tries when a
// release is published, and in any case re-tries within the maximum poll
// interval (1s by default, WithMaxPollInterval) or when the blocker's lease
// runs out: a lost message delays a waiter, never strands it. Where
// SUBSCRIBE is refused, waiters poll. WithPolling makes them always poll.
// Client.Hub lends the same wake-ups to code that waits for conditions of
// its own in Redis (pubsub.Hub.Wait, pubsub.Publish).
//
// A call whose context is already done returns its error at once and sends
// nothing, TryLock included: go-redis sends no command on a done context,
// and a try on a context of the library's own would outlive the caller's
// deadline. An acquire then also matches ErrNotAcquired. Releases are the
// exception (see Releases).
//
// # Releases
//
// Every release (Unlock, RUnlock, a semaphore's Release, Resign, and a
// MultiMutex's or RedLock's Unlock) is sent on a context of the library's
// own: its context's values (for observers and tracing) without its
// cancellation or deadline, bounded by a third of the Client's lease TTL
// (the watchdog's interval: 10s by default), and by 5s at least, so that
// go-redis can follow a failover however short the lease. So a deferred
// Unlock(ctx) releases even when ctx ended first (the client of a request
// went away), and a release is not cut off half-way by its caller's
// deadline. A context that is never cancelled (context.Background(), and
// values added to it) is used as it is, bounded by go-redis's timeouts
// alone. Each release carries a request id that Redis remembers, so a copy
// that go-redis retries after a lost reply is applied once.
//
// A release that fails (a timeout, that bound, a dropped connection) may or
// may not have been applied, and whoever deferred it will not retry it. So
// the hold is no longer renewed: it ends in Redis within the lease it has,
// and its Lost closes (its contexts end with ErrLeaseLost) when that lease
// may end, unless a release or Extend that succeeds comes first. A failed
// release of a re-entry leaves the hold as it was.
//
// # Outages
//
// A blocking call (Lock, RLock, Acquire, Campaign, a latch's Wait,
// pubsub.Hub.Wait) rides out an outage: a try that fails because Redis is
// down, restarting, loading its data or failing over (a connection refused
// or reset, a network timeout, LOADING, TRYAGAIN, CLUSTERDOWN, MASTERDOWN,
// READONLY) is sent again, after a pause that doubles from 50ms up to the
// maximum poll interval, until it is answered or the context ends. Each
// failure is an observer event (Retrying); the log hears the first at Warn
// level, then the 2nd, 4th, 8th... in a row, and the end of the outage at
// Info. A wait whose context ends meanwhile returns an error that matches
// ErrNotAcquired and ctx.Err() and names the last failure. The try sent
// again is the same request, with the same request id, so a try applied
// whose reply was lost is found by the next one, not taken twice. A
// waiter's place in a fair queue and its registration to be woken are kept
// by its heartbeat: an outage longer than the lease TTL drops them (so do
// restarts without persistence), and the waiter queues again, at the back,
// on its next try. One-shot calls (TryLock, TryAcquire, Unlock, ...) and
// errors that trying again cannot mend (a wrong type, a bad argument, a
// closed Client) fail at once. Holds are not kept by retries: a hold whose
// renewals fail is lost by the clock, as ever (see Loss).
//
// # Keys
//
// For a name N and the prefix P ("rc" by default) the keys are
// P:{N}:lock (a hash: owner, hold count, token, holder metadata) and
// P:{N}:fence (the token counter; see Fencing tokens); rlock's waiter
// registry is P:{N}:waiters. The name's channel is P:{N}:ch, and each
// Client's waiters wait on P:{N}:ch:<client id>, where a release that knows
// whom to serve wakes them (rlock, rfairlock). The {N} hash tag keeps them
// in one Redis Cluster slot. Names are
// non-empty, at most 512 bytes, valid UTF-8, and contain no brace.
//
// # Redis Cluster and Sentinel
//
// New accepts a *redis.ClusterClient or a Sentinel failover client as well
// as a *redis.Client. On Cluster every script touches the one slot of its
// name, so names spread the load over the shards, and notifications use
// sharded pub/sub (SPUBLISH, SSUBSCRIBE; Redis 7.0 and later): a release
// is delivered only within the shard that owns the name. The Client keeps
// one subscription connection per primary that owns a name someone waits
// on, and moves a name's subscription when its slot migrates or its
// primary fails over, waking its waiters to re-check. The watchdog renews
// every hold in one pipeline per primary per tick. A cluster older than 7.0
// is detected once and served with PUBLISH and SUBSCRIBE. Package pubsub
// describes the details, and what a Sentinel failover does to waiters.
//
// A failover can lose the latest writes: Redis replicates asynchronously.
// A holder whose lock did not reach the promoted replica sees its renewals
// fail and Lost() close, while a waiter can take the lock on the new
// primary before that: two holders for up to one lease. See Replication
// and failover below.
//
// # Eviction
//
// Every hold, waiter heartbeat and permit lease is a key with a TTL. A
// server whose maxmemory-policy may evict such keys (volatile-* or
// allkeys-*) can delete a held lock under memory pressure, and the lock is
// then granted again while its holder still works under it. On its first
// operation a Client reads the policy of the server (of every primary, on
// Cluster) with CONFIG GET, and logs one warning through its logger
// (slog.Default unless WithLogger says otherwise) if it evicts; set
// maxmemory-policy noeviction. Where CONFIG is not permitted it logs at
// debug level and carries on.
//
// # Commands the server must allow
//
// On its first operation a Client also checks, in the background and
// once, whether the server refuses a command the library needs: EVALSHA,
// SCRIPT LOAD, TIME, PUBLISH or SPUBLISH and XADD inside a script,
// SUBSCRIBE or SSUBSCRIBE, and WAIT with WithWaitReplicas. It logs one
// warning per command refused, naming what stops working and what to do.
// An operation that a refusal makes fail returns an error matching
// ErrRefused that names the command. docs/operating.md has the table.
//
// # Replication and failover
//
// Redis replicates asynchronously: a primary acknowledges a write before
// any replica has it. If the primary fails and a replica is promoted before
// it has the write, an acquire that the client was told succeeded is lost,
// and the new primary grants the lock again while its first holder still
// works under it.
//
// WithWaitReplicas narrows that window: every acquire and release, and
// every renewal, waits until replicas acknowledge it, and an acquire they
// do not acknowledge is undone. Its documentation is the contract.
//
// It does not close the window. WAIT is not consensus: Sentinel and
// Cluster may still promote a replica that did not acknowledge (they pick
// the best replica they can reach, and may reach none of those that
// acknowledged); a replica that acknowledged can restart without the write
// when it does not persist; and a primary cut off by a partition keeps
// accepting writes from the clients on its side for a while (until
// cluster-node-timeout, or for ever with Sentinel unless
// min-replicas-to-write is set), writes that the promoted side never sees.
// A hold can also end without any failover, when its holder pauses past its
// lease.
//
// The tests see both: on a 3-master cluster whose primary is taken over
// (CLUSTER FAILOVER TAKEOVER) 0-2 ms after an acquire, 2 to 15 of 50
// trials granted the lock twice without WithWaitReplicas and none with it;
// after a forced Sentinel failover, the old primary stays writable for
// about ten seconds and a holder whose client has not yet switched keeps
// renewing there while its lease runs out on the new primary: without the
// option, the holder believes it holds while the new primary grants the
// lock again; with it, those renewals go unacknowledged (the old primary
// has lost its replica) and the holder sees Lost first.
//
// A failover that loses an acquire loses its increment of the token
// counter too: the next holder can get the same token. An acquire that
// WithWaitReplicas acknowledged had its token on n replicas.
//
// The defence is the fencing token that every hold returns: a store that
// remembers the highest token it has seen and refuses lower ones stays
// correct whenever two clients believe they hold one lock, whatever the
// cause. See Martin Kleppmann, "How to do distributed locking" (2016), and
// Kyle Kingsbury's Jepsen analysis of Redis with Sentinel (2013), in which
// partitions and failovers lost writes that Redis had acknowledged.
//
// # Errors
//
// Every error matches one of the sentinels below with errors.Is. Bad input
// is ErrInvalidArgument, naming the argument, and leaves Redis unchanged.
package redcoord
