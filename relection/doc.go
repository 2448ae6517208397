// Package relection elects one leader among processes through Redis, in
// the spirit of etcd's concurrency.Election: candidates campaign with a
// value that says who they are (an address, a worker's name), one of them
// leads at a time, in a numbered term, and anyone can ask who leads or
// watch the leaders change.
//
//	e := relection.New(c, "billing-scheduler")
//	if err := e.Campaign(ctx, "worker-7"); err != nil { ... } // blocks until this handle leads
//	work, stop := e.Context(ctx) // cancelled when the lead is lost or resigned
//	defer stop()
//	runScheduler(work, e.Token()) // pass the term to what the leader writes
//	_ = e.Resign(ctx)             // the next candidate leads at once
//
// # Order and hand-off
//
// Candidates lead in the order they first campaigned, across processes: an
// election is a fair lock (package rfairlock) whose holder leads. Resign
// hands the lead to the longest-waiting live candidate inside the same
// script, and publishes the grant to that candidate's process alone, whose
// Campaign returns on reading it, without a round trip: an election has no
// ForceUnlock, and only the handle that knows a term's token ends it, so
// nothing but the lease ends a grant before its candidate reads it (the
// lease is dated from when the grant can have been made, and the
// watchdog's renewals verify the term from then on; with WithWaitReplicas
// the candidate confirms the grant in one round trip, a write that waits
// for the replicas). So the next leader, in another process, returns from
// Campaign a little after the Resign's own round trip, whose reply leaves
// Redis with the grant (BenchmarkHandOff reports both; docs/benchmarks.md
// has the figures): most of a hand-off is the Resign's script, some twenty
// commands on seven keys and two messages.
//
// # Terms and fencing
//
// Each new leadership is a term: a fencing token, strictly increasing
// across the leaders of a name and floored by the Redis server's clock
// like every token in this module (see package redcoord), so it keeps
// increasing across a restart of Redis without persistence. Token returns
// the handle's term. A leader paused past its lease (a long GC, a stopped
// VM) may still believe it leads when it wakes: a store that refuses
// writes with a term lower than the highest it has seen keeps it from
// overwriting its successor's work.
//
// # Losing the lead
//
// While a handle leads, the Client's watchdog renews its lease every third
// of the lease TTL (redcoord.WithLeaseTTL, 30s by default). If the lease
// cannot be renewed in time (the process is cut off from Redis, or Redis
// stalls), Lost is closed and contexts from Context are cancelled with the
// cause ErrLeaseLost, by the watchdog's clock, before Redis can have let
// the lease run out: the old leader learns it no longer leads before
// another can lead. If Redis loses the lead instead (the key deleted or
// evicted, a restart without persistence, a failover to a replica that
// missed it), a candidate can lead at once, and the old leader learns it
// at its next renewal, up to a third of the lease TTL later: only the
// term, checked by the store, keeps its writes out meanwhile. A leader
// that dies without Resign is replaced when its lease runs out, at most a
// lease TTL after its last renewal: the first live candidate's timer is
// set to the leader's remaining lease, and the candidates' heartbeats hand
// on a lead whose lease ran out. A candidate that dies while it waits is
// skipped once its heartbeat lapses (a lease TTL), and a Campaign whose
// context ends leaves the queue, or passes on a lead granted meanwhile.
//
// # Observing
//
// Leader returns who leads now: the value, the term and when it began.
// Observe returns a channel of every change, in order: first the current
// leader, then each new term, each value a leader proclaims (Proclaim,
// which changes the value without a new term), and each end of a lead that
// no candidate follows, sent as a Leader with Term 0 (nobody leads). Each
// change is appended to a log in Redis (a stream that keeps at least the
// latest 128) by the script that makes it, and published on the name's
// channel; each process with observers hears it once and its observers
// read the log from where they are, so every observer sees the same
// sequence, and a lost message costs at most one poll interval
// (WithMaxPollInterval). A lead whose lease ran out runs no script, so its
// end is not logged: the next leader's term follows it in the log, and
// Leader says whether anyone leads meanwhile.
//
// # Handles and their calls
//
// A handle (New) is one candidate. Campaign on a handle that leads
// proclaims the new value; a second Campaign on a handle whose first still
// waits waits for it; Resign and Proclaim on a handle that does not lead
// report it at once, even while a Campaign of it waits. Give each candidate its own handle; one Client per
// process is enough for any number of them. Every wait is bounded by its
// context, and by the Client's Close.
//
// Bad input (a nil Client, an empty or malformed name, an empty value or
// one longer than MaxValueLen, a bad option) is ErrInvalidArgument,
// naming the argument, with nothing written to Redis; a closed Client is
// ErrClosed, and a done context its error, with nothing written either,
// except for Resign, which a done context does not stop (see "Releases"
// in package redcoord). A name that another primitive holds, or whose
// keys hold another type, is ErrWrongType before anything is written.
//
// # Keys
//
// For a name N and the Client's prefix P, an election keeps the keys of a
// fair lock of kind "relection" (P:{N}:lock: the leader, its term, its
// value and since when; P:{N}:fence; the candidates' queue in
// P:{N}:elect-queue, P:{N}:elect-alive and P:{N}:elect-waiting, apart from
// a fair lock's queue; each Client's release and leave markers,
// P:{N}:rel:<client id>, for a minute) and its log, P:{N}:elect-log, which
// expires a day after its last change. Observers wait on P:{N}:ch, candidates on their Client's
// P:{N}:ch:<client id>. All share the {N} hash tag, so every script and
// channel is in the name's Redis Cluster slot.
package relection
