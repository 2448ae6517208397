// Package rrwlock is a reentrant read-write lock named in Redis: any number
// of readers, or one writer, across processes, in the spirit of Redisson's
// RReadWriteLock, with a lease per reader and writer preference.
//
// # Readers and writers
//
// RLock takes a read hold, shared with other readers; Lock takes the write
// hold, exclusive of readers and other writers. A handle (New) is an owner
// in Redis; another handle is another owner, even in the same goroutine.
// Each RLock needs its RUnlock and each Lock its Unlock. Goroutines that
// share one handle share its read holds (several may read at once, as with
// sync.RWMutex's RLock), and its write hold excludes them as with a
// sync.Mutex: a Lock, or an RLock, on a handle whose write hold another
// call took waits for that hold to end, in this process, without a request
// to Redis, and their Try variants find it held. Go has no thread ids, so
// the context carries the identity: a Lock whose ctx descends from the
// write hold's Context re-enters it, and an RLock with it takes a read hold
// beside it (a downgrade). See "Sharing a handle" at redcoord.Locker.
// RLocker returns the read side as a redcoord.Locker.
//
// # Writer preference
//
// As with Go's sync.RWMutex, a blocked Lock excludes new readers: once a
// writer waits, RLock by a handle that holds no read lock waits too, so a
// stream of overlapping readers cannot starve a writer. A writer waits at
// most for the read holds taken before it arrived, and a hand-off. A handle
// that already holds a read lock re-enters at once even while writers wait,
// so it cannot deadlock itself. The price is the readers': while writers
// keep arriving, new readers keep waiting. Writers among themselves are not
// queued: a release wakes one waiting writer (see Notifications), and a
// writer that reaches Redis before it, a newcomer included, takes the lock.
//
// Waiting writers are registered in Redis with a heartbeat deadline one
// lease TTL ahead, renewed by the Client's watchdog; a writer that dies
// while waiting stops holding readers back within that TTL, and is woken
// at most once meanwhile (see Notifications).
//
// # Downgrade, not upgrade
//
// The writer may take read holds and then release its write hold: it keeps
// reading, and other readers may join. A handle that holds only read holds
// gets ErrUpgrade from Lock at once: two readers that both waited to upgrade
// would wait for each other forever. RUnlock, then Lock.
//
// # Leases
//
// Each handle's read holds have their own lease, renewed by the watchdog
// (every TTL/3 of the Client's lease TTL) until the last RUnlock, so a reader
// that dies holds the lock at most one lease TTL, and never shortens another
// reader's lease by leaving. The write hold's lease works as rlock's.
// RLockWithLease and LockWithLease take fixed leases that are not renewed.
// RLost and Lost report a hold found gone; RUnlock and Unlock then return
// ErrLeaseLost (see "Loss" in package redcoord).
//
// # Notifications
//
// A writer's try that finds the lock busy also registers its Client in a
// wake registry in Redis (no extra round trip), once for all the Client's
// writers waiting on the name; one heartbeat per Client and name keeps it.
// A new Lock where writers of its Client already wait queues behind them
// in its process, without a round trip (TryLock still tries). A writer's
// last Unlock, or the last reader's RUnlock, wakes one registered Client,
// the one registered or renewed longest ago: one message, on that Client's
// own channel, however many processes have writers waiting; the Client
// wakes its longest-waiting writer. The woken Client leaves the registry;
// a writer that takes the lock with others of its Client behind it
// registers it again, and if a newcomer takes the lock first, the woken
// writer's next try does. A woken writer that gives up passes the wake to
// the next writer of its Client, or, the last one, to the next registered
// Client. A Client that polls (redcoord.WithPolling) waits as a writer
// without registering.
//
// When no writer waits, a writer's last Unlock wakes every waiting reader,
// with one message on the readers' channel of the name, which only the
// processes with waiting readers are subscribed to (or were, within the
// last poll interval: a Client keeps a channel subscribed that long after
// its last waiter leaves, so that a loop of RLock calls does not subscribe
// each time). Each of those processes wakes all its readers: all of them
// can enter. Readers and writers wait on separate channels, so a release
// never wakes waiters that cannot take the lock. Every wait is also bounded
// by the poll interval and the blocker's lease, so a lost message costs a
// delay, never a hang.
//
// # Fencing tokens
//
// Every fresh write hold takes the next token of the name (Token), above
// every earlier one (see Fencing tokens in package redcoord); a read hold
// reports the token of the last write before it (RToken): which version of
// the protected data the reader saw, 0 when no write lock was taken within
// the fence's lifetime. A ForceUnlock also takes a token, unused by any
// write, so that a read hold taken after it reports a greater RToken than
// the holds it ended: the force's message to their Clients names that
// bound, and spares the holds taken since, and a late copy of the force
// finds the fence moved (see "Forced unlock" in package redcoord).
//
// # Keys
//
// For a name N (prefix rc): rc:{N}:lock (the write hold, a hash),
// rc:{N}:fence (the token counter; it expires a day after the last token, see
// Fencing tokens in package redcoord), rc:{N}:readers (read hold
// counts) and rc:{N}:leases (read lease deadlines), rc:{N}:writers (waiting
// writers' heartbeat deadlines), rc:{N}:wwaiters (the writers' wake
// registry), rc:{N}:rel:<client id> (one per Client: its handles'
// releases, for a minute, so that a retried release is recognised, and
// their acquire requests that gave up, for a minute, so that a late copy
// of one is refused), and
// the channels rc:{N}:ch (readers) and rc:{N}:wch:<client id> (each
// Client's writers). Every key
// expires by itself: the fence a day after its last token, the others with
// the last lease or heartbeat in them.
package rrwlock
