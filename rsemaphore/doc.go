// Package rsemaphore holds two semaphores named in Redis, in the spirit of
// Redisson's RSemaphore and RPermitExpirableSemaphore: Semaphore, a count
// of permits that any process may acquire and release, and
// ExpirableSemaphore, whose permits each have an id, a fencing token and a
// lease, so that the permits of a process that dies come back.
//
//	pool := rsemaphore.New(c, "db-connections")
//	_, _ = pool.TrySetPermits(ctx, 8) // once, by whoever comes first
//	if err := pool.Acquire(ctx, 1); err != nil { ... }
//	defer pool.Release(ctx, 1)
//
// # Setting the permits
//
// A semaphore's total is set once, by any handle: TrySetPermits does it
// only if nobody has; SetPermits resizes it (permits held stay held, so
// the available count may go below 0 until enough come back); AddPermits
// adds or removes some. The total has no TTL: it is configuration, and
// lives until the keys are deleted.
//
// Acquiring from a semaphore whose permits were never set is ErrNotSet at
// once, not a wait: a wait could not tell a semaphore that is about to be
// set from a misspelt name, and would end only with its context (Redisson's
// acquire waits forever). A handle made WithWaitForSet waits for them
// instead, for workers that start before the coordinator: the set wakes
// it. Asking for more permits than the total is ErrInvalidArgument at
// once, for the same reason.
//
// # Acquire and release
//
// Acquire(ctx, n) takes n permits all at once or none: it never holds some
// while waiting for the rest, so two large requests cannot deadlock each
// other. A free semaphore costs one round trip. A waiter sleeps on the
// Client's pub/sub Hub. A Client registers in Redis once per name, however
// many of its Acquires wait (a sorted set of waiting Clients, with the
// fewest permits one of their Acquires asks for), kept alive by one
// heartbeat of the Client's watchdog; its waiters queue locally, and an
// Acquire no smaller than those already waiting joins them without a round
// trip (a smaller one tries first, which tells Redis its size; TryAcquire
// always tries). A release then wakes, inside its own script, the
// registered Clients with a request that fits in what is available,
// skipping one whose requests are all too large, up to the permits it
// freed: one message per woken Client, sent on its own channel, which only
// that process hears, and which wakes its local waiters that fit. A release
// of 1 wakes one waiter of 1 in the whole deployment, not one in each
// process. A release by a Client whose own Acquires wait hands its permits
// to them without a message. A woken Client leaves the registry and its
// waiter's next try registers it again, unless that try took the permits
// for the Client's last waiter; the last one to fail or give up takes the
// registration away, even when a reply was lost on the way; so does a wait
// whose subscription is not confirmed in time, which then polls. A waiter
// woken just as its context ended passes the wake on: to its Client's
// waiters that fit in what is available, or, when none does, to the next
// registered Clients that fit, as the release would have.
//
// Live waiters are woken before dead ones. The watchdog renews a
// registration every TTL/3 (WithLeaseTTL, 30s by default); one whose
// deadline is in the later half of the time from now to the latest
// deadline is fresh, and a release wakes fresh Clients first, the one
// renewed longest ago first, and stale ones only with the permits left
// over, the longest unrenewed first. A process that dies with blocked
// acquires so costs the live waiters nothing: its one registration is
// stale half a TTL after its last renewal (until then a wake may still
// reach it, and that waiter's timer covers it) and is dropped at its
// deadline, one TTL after it. A release reads the registry in that order
// until its permits are spent, one entry per waiting Client: no number of
// Clients whose requests are too large hides one that fits.
// Every wait is also bounded by a timer (the poll interval, 1s by
// default), so a lost message costs at most one interval.
//
// A Semaphore's permits have no owner: any handle may release permits that
// another acquired, as with Java's and Redisson's semaphores. Releasing more
// than is held (available would exceed the total) is ErrNotHeld. A request
// that go-redis retries after a lost reply is applied once: each acquire
// and release has a request id that Redis remembers for 15 seconds, at
// about 100 bytes per request meanwhile.
//
// A Semaphore's permits have no lease either: permits held by a process
// that dies are gone until someone releases them. Use ExpirableSemaphore
// when holders may crash.
//
// # Fairness
//
// By default a semaphore is unfair: a release wakes the registered waiters
// that fit, and a newcomer that reaches Redis first may take the permits
// ahead of them; a large request can wait while a stream of small ones
// keeps the count low. It needs no queue in Redis, only the registry. In
// the bench's semaphore scenario (go run ./bench -start redis-server
// -scenario semaphore -workers 64 -procs 1,64: 64 workers on 8 permits,
// 1ms holds), with one Client per worker the unfair semaphore made 3,700
// acquisitions/s at 3 round trips each, with a p50 wait of 0.7ms and a p99
// of 116ms: newcomers overtake the woken waiters; WithFair made 4,060 at 2
// round trips, with a p50 of 14ms and a p99 of 17ms. With all 64 workers
// on one Client, the unfair semaphore's waiters queue behind one
// registration in their process, in order: 4,190 at 2 round trips, p99
// 17ms.
//
// WithFair serves a handle's blocking Acquire calls in the order they first
// asked, with the design of rfairlock: a waiter joins a queue in Redis and
// the Client's watchdog keeps its place with a heartbeat. A release grants
// permits to the live waiters at the head of the queue, in order, as long
// as the head's request fits, inside the same script, and tells each
// grantee alone; the grantee returns from Acquire on that message, with no
// further round trip (one, with redcoord.WithWaitReplicas, to make sure the
// replicas have the grant). A request for 3 permits at the head is not overtaken
// by later requests for 1: permits that do not satisfy the head wait for
// it. While anyone is queued, nobody else may take permits (not TryAcquire,
// not an unfair handle), except Drain. A queued waiter whose process dies
// holds the queue up until its heartbeat lapses, within one lease TTL.
//
// Fair and unfair handles do not wait on one name at once: unfair waiters
// would wait for as long as any fair waiter is queued. A blocking Acquire
// of one kind while a live waiter of the other kind waits is
// ErrInvalidArgument at once, naming its kind ("WithFair: the name has
// unfair waiters", "unfair Acquire: the name has WithFair waiters"), and
// leaves Redis as it was; the check and the wait are one script, so two
// kinds never both wait. An unfair waiter whose Client polls is not
// registered, so a fair Acquire beside it is not refused: the unfair
// waiter's next try is. TryAcquire never waits and is never refused. Use
// one kind of handle per name.
//
// A waiter whose context ends leaves the queue; if permits were granted to
// it just then, it gives them back, so a cancelled Acquire leaves the count
// as it was. A Semaphore's give-back (its permits have no lease to fall
// back on) is sent again while the connection fails it, for up to 5s, so
// that a process cut off from Redis as its Acquire gave up gets back the
// permits that Acquire's request took.
//
// # Permits with leases
//
// ExpirableSemaphore's Acquire returns a Permit: an id, a fencing token
// strictly increasing across the name, and a Lost channel. A permit taken
// with AcquireOptions.Lease ends when its lease does, unless Release or
// Extend comes first. A permit taken without one is renewed by the Client's
// watchdog, in the same pipelined round trip as every other lease of the
// Client, every TTL/3; if its process dies, or is cut off from Redis, the
// permit returns within one TTL (WithLeaseTTL, 30s by default) of its last
// renewal: the session semantics of ZooKeeper's and etcd's semaphores.
//
// Every script first drops the permits whose lease has ended, so an
// expired permit is free the moment it expires. A waiter that finds every
// permit held registers its Client, as a Semaphore's waiter does (once per
// Client and name, its other waiters queued locally behind it), and sleeps
// until the soonest lease ends (or a release wakes it, or the poll interval
// passes), and then takes the permit with no message from anyone. A
// release wakes one registered Client per free permit, live before dead as
// a Semaphore's, one message each on its own Client's channel; a release
// by a Client whose own acquires wait hands the permit on to them without
// a message. Releasing a permit that is not held (unknown,
// expired, released already) is ErrNotHeld, never a silent success; a
// Release that go-redis retries is applied once.
//
// # Keys
//
// For a name N and the Client's prefix P, a Semaphore keeps P:{N}:permits
// (a hash: kind, available, total), and while used P:{N}:sem-queue,
// P:{N}:sem-alive, P:{N}:sem-waiting (the fair queue), P:{N}:sem-waiters
// and P:{N}:sem-sizes (the registry of unfair waiters, by deadline and by
// size), P:{N}:done (recent request ids) and P:{N}:drained:<request id>
// (what a Drain took, for 15 seconds). An
// ExpirableSemaphore keeps P:{N}:permits (kind, total), P:{N}:sem-leases
// (permit id to deadline), P:{N}:tokens, P:{N}:sem-fence, P:{N}:xsem-waiters
// (its registry) and P:{N}:done. Every key but the permits hash expires by
// itself once unused (the fence a day after its last token, see Fencing
// tokens in package redcoord). Both wake and grant on each Client's own
// channel, P:{N}:sem-ch:<client id>, and a SetPermits that leaves a waiting
// request unable to ever succeed (larger than the total, or a total of 0)
// sends one message to each Client with a waiter, so that it fails at once.
// All of them share the {N} hash tag, so each script and channel is in one
// Redis Cluster slot.
//
// A name is either kind of semaphore: the other's scripts report
// ErrWrongType, as they do for a key of another type. A lock (rlock,
// rfairlock, rrwlock) and a semaphore of the same name are two separate
// objects: no key or channel of one is the other's.
//
// Counts are at most MaxPermits (2^53-1), the largest integer Redis's Lua
// holds exactly; a larger one is ErrInvalidArgument.
package rsemaphore
