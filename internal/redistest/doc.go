// Package redistest starts Redis servers for tests and injects faults into
// the connections a go-redis client makes to them.
//
// # Servers
//
// [Real] starts a redis-server child process on a free 127.0.0.1 port, with
// no persistence, and skips the test when the binary is not installed.
// [Mini] starts a miniredis on 127.0.0.1. [Both] runs a test body against
// each. [Bubble] returns a miniredis with no listener at all, for use inside
// a testing/synctest bubble, where keys expire on the bubble's fake clock.
//
// # Valkey
//
// With REDCOORD_SERVER=valkey in the environment ([ServerEnv]) every helper
// that starts a process (Real, the Cluster, Sentinel, replica and
// restartable helpers) starts valkey-server, and StartCluster joins the
// nodes with valkey-cli, on the same command lines: the same tests then run
// on Valkey. Unset, or "redis", they start redis-server and redis-cli; any
// other value fails the test that starts a server.
//
// # Cluster and Sentinel
//
// [StartCluster] starts a Redis Cluster of redis-server processes on free
// 127.0.0.1 ports, joined by redis-cli --cluster create, with
// cluster-node-timeout 1000 ms so that a killed master's replica takes over
// in about two seconds. [Cluster] finds the master of a key, fails a master
// over to its replica (CLUSTER FAILOVER), kills a node, and moves a slot with
// its keys while the cluster serves it (SETSLOT IMPORTING/MIGRATING, MIGRATE,
// SETSLOT NODE). [StartSentinel] starts a primary, its replica and three
// sentinels (redis-server --sentinel, quorum 2, down-after-milliseconds
// 1000); [Sentinel] gives a go-redis failover client, forces a failover
// (SENTINEL FAILOVER) and kills the primary. Each waits for its topology to
// settle, at most 20 s per wait; each skips the test when a binary is
// missing, as [Real] does.
//
// # Bounds on real time
//
// The bounds these helpers state (a server answers within 5 s, a topology
// settles within 20 s) are an idle machine's: each wait stretches its bound
// by [Patience], so that a loaded machine does not fail a test that would
// pass on an idle one. Tests use Patience for their own bounds of the kind.
//
// # Round trips
//
// [RoundTrips] is a go-redis hook that counts one round trip per command and
// one per pipeline, so tests and benchmarks can assert "this operation costs
// exactly two round trips".
//
// # Faults
//
// [Faults] wraps the connections a client dials (through
// redis.Options.Dialer) and reads the RESP commands the client writes. It can
// drop the reply of one chosen command after the server has executed it
// ([Faults.DropReply]), silently swallow all traffic of subscriber
// connections ([Faults.Blackhole]) and break every connection at once
// ([Faults.CloseAll]). A connection broken by a fault behaves like one whose
// peer went away: writes are accepted and discarded, reads return io.EOF, so
// go-redis treats the error as retryable and dials a new connection.
//
// # A simulated network
//
// [Net] is a seeded network for a synctest bubble: every connection dialed
// through [Net.Dialer] passes through it, and it may hold a script call
// and deliver it, on a ghost connection of its own, after requests sent
// later on other connections (its client sees a late reply, or a timeout
// while the copy is still in flight), deliver it twice, or drop it before
// or after the server applies it; and drop, duplicate or delay a pushed
// pub/sub message, keeping each connection's order. What it does to each
// request and message comes from faults armed one at a time or from a
// draw function the caller seeds.
//
// Nothing here keeps package-level state: every server, hook and fault set
// belongs to the test that made it and is released by t.Cleanup or by the
// caller, as each constructor documents.
package redistest
