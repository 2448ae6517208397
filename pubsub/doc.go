// Package pubsub lets code that waits for a condition kept in Redis sleep
// until the condition may have changed, instead of polling in a loop: the
// wake-ups that redcoord's own locks wait on, for conditions of your own.
//
// A redcoord Client owns one Hub: get it from (*redcoord.Client).Hub. There
// is no other constructor, because the Hub is the Client's: it shares the
// Client's poll interval (redcoord.WithMaxPollInterval), logger, key prefix
// and lifetime, and the Client's Close closes it. A Client made with
// redcoord.WithPolling has no Hub (Hub returns nil).
//
// # Waiting
//
// Hub.Wait replaces a spin-wait such as
//
//	for {
//		ok, err := rdb.SetNX(ctx, "job:lock", "me", 30*time.Second).Result()
//		if err != nil || ok {
//			break
//		}
//		time.Sleep(100 * time.Millisecond)
//	}
//
// with a check that runs once, then again each time a message arrives on a
// channel, or the poll interval passes, until it reports true, fails, or
// ctx ends. Wait subscribes, and waits for the server to confirm it, before
// its first check: a message published after a check that failed is never
// missed. Whoever makes the condition true publishes on the channel
// afterwards, with Publish, or from a Lua script with the command
// PublishCommand returns.
//
// # Messages
//
// A message is a hint to re-check, whatever it says. Only the library's
// own messages wake fewer Waits: "1" wakes one Wait on the channel in each
// process (a lock released: one waiter can take it), and a message that
// begins with "n:" or "@" may wake none. Any other message, "*" by
// convention, wakes every Wait on the channel, in every process.
//
// # One connection
//
// Every Wait of a Client, and every blocking acquire of its locks and
// semaphores, shares one pub/sub connection. The first Wait on a channel
// subscribes to it and the last one to return unsubscribes, so 10,000
// waiters on 1,000 channels use one connection; the Hub's reader never
// blocks on a slow waiter. Stats counts channels, waiters and the
// SUBSCRIBE traffic.
//
// # A hint, bounded by a timer
//
// Redis pub/sub is fire-and-forget: a message published while the
// connection is being re-established, or during a failover, is lost. So
// every Wait also re-checks after the poll interval, even without a
// message: a lost message costs at most one interval, never a hang. After a
// reconnect every Wait re-checks at once (Stats.Reconnects counts them).
//
// # When SUBSCRIBE is refused
//
// If the server refuses SUBSCRIBE (an ACL without the pubsub commands, or
// without the Hub's probe channel "<prefix>:hub:probe"; a proxy without
// pub/sub), Wait does not fail: it polls, re-checking every poll interval.
// Stats.Refused is then true, and Stats.Err is an error that matches
// ErrSubscribeRefused with errors.Is and wraps the server's reply; the
// Client's logger says so once. A server that does not confirm the probe
// within 5 seconds (a stalled connection) is treated the same for 30
// seconds, then asked again.
//
// # Redis Cluster and Sentinel
//
// On a *redis.ClusterClient the Hub uses sharded pub/sub (SSUBSCRIBE, Redis
// 7.0 and later) with one connection per primary that owns a channel waited
// on, and Publish uses SPUBLISH: a message is delivered within the shard
// that owns its channel's slot, not broadcast to every node. When a slot
// migrates or its primary fails over, the Hub subscribes the channel on its
// new owner and wakes its Waits to re-check. A cluster without sharded
// pub/sub (before 7.0) is detected once: the Hub uses SUBSCRIBE and Publish
// falls back to PUBLISH.
//
// Behind a Sentinel failover client the Hub follows go-redis: when the
// primary dies, go-redis reconnects to the promoted one and every Wait
// re-checks. A forced failover (SENTINEL FAILOVER) leaves the old primary
// running and the connection on it; messages published on the new primary
// reach it once the old one replicates from the new (about ten seconds on
// Redis 7.0), and until then Waits re-check on the poll interval.
package pubsub
