// Package chaos holds the seeded fault-schedule suite of redcoord: its tests
// drive every exclusive primitive (rlock, rfairlock, rrwlock, MultiMutex,
// RedLock, relection, ExpirableSemaphore, Semaphore) with several Clients and
// handles through a random mix of operations and faults drawn from one seed,
// record what each handle was told, and check the history: exclusivity,
// fencing, counts, liveness once faults stop, and nothing left behind.
//
// The checkers hold the user's view. A handle believes it holds from its
// acquire's success until its hold's Context ends or its Unlock returns nil
// (an Unlock that fails does not end the belief), and a compound's belief
// covers every name; two beliefs in one name beyond the documented windows
// are a violation. Unlock's error is checked against what happened (Lost,
// Context), and Redis's hold count against the re-entries a handle believes
// in. A waiter that waits more than a poll interval, in a stretch free of
// faults, while its name (or the permits it asks for) is free in Redis and
// by every belief is a stranded waiter (stranded_test.go).
//
// The harness in mutants/ (build tag mutants, see its README) applies small
// deliberate bugs to the scripts and the hold code one at a time and runs
// the suite on each: the net is judged by what it catches.
//
// The bubble tier runs on miniredis inside a testing/synctest bubble, on a
// simulated network (redistest.Net, simnet_test.go): every command, reply
// and pub/sub message of every connection passes through it, and until the
// quiet phase it may hold a script call and deliver it after later requests
// of other connections (its caller sees a late reply, or a timeout while
// the copy is still in flight), deliver it twice, or drop it before or
// after the server applies it, and drop, duplicate or delay a message. Each
// of its decisions is drawn from a hash of the schedule's seed, what it
// faults (the process and server of the connection, the script and key
// called) and the instant (simnet_test.go), and the summary line counts
// the requests it delivered late (late=). The tier is determined by its
// seed; a failure names the seed, and
//
//	REDCOORD_CHAOS_SEED=<seed> go test ./internal/chaos -run TestChaos
//
// replays that schedule. On a sound network it replays byte for byte
// (TestReplay checks it), with one exception: when one event wakes several
// waiters at one instant of the bubble's clock (a release's message), their
// tries reach miniredis in the goroutine scheduler's order, and which of
// them takes the name, and the history from there, follows it. Under the
// network's faults that race remains, and two rarer ones join it: requests
// that call one script on one key from one process at one instant draw
// their faults in the order they reach the network, and a try that one run
// sends and the other does not (a waiter that finds its channel still
// subscribed or not) may meet a fault of its own; other decisions do not
// move. Most failures reproduce from their seed, not every history byte
// for byte; REDCOORD_CHAOS_REPLAY_FAULTS=<n> makes TestReplay count them
// over n seeds per primitive.
//
// REDCOORD_CHAOS_SCHEDULES=<n> runs n schedules per primitive instead of
// the default; they are split over child processes, one per CPU
// (REDCOORD_CHAOS_SHARDS=<n> sets how many: shard_test.go), and reported as
// one run. The real-server tier (restarts with and without persistence,
// SIGSTOP) is seeded too, but timing makes it best-effort.
//
// The package has no API: everything is in its tests.
package chaos
