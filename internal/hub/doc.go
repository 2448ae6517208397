// Package hub wakes waiters when something they wait for in Redis may have
// changed, so that they do not have to poll. It is the implementation behind
// package pubsub, whose Hub is this one with only Wait and Stats: the
// Subscribe side (weights, pass-on, targeted ids) is the wake protocol
// between the library's own waiters (internal/acquire) and its scripts.
//
// A Hub multiplexes every waiter of a process onto one pub/sub connection:
// redcoord's Client owns one (internal/core), and every blocking acquire in
// the library waits through it. Channels are reference-counted: the first
// waiter of a channel sends SUBSCRIBE, the last one to leave sends
// UNSUBSCRIBE, and 10,000 waiters on 1,000 channels still use one
// connection. One reader goroutine dispatches each message to the waiters
// of its channel by a non-blocking send on a wake channel with a buffer of
// 1, so a slow waiter never holds up the others and several wakes before it
// looks are one.
//
// # Messages
//
// Publishers (the Lua scripts, or Go code through One, All, N and To) send
// one of these payloads:
//
//	1              wake one waiter of the channel in each process
//	*              wake every waiter of the channel
//	n:K            wake waiters whose weights fit in K (K decimal digits, no sign)
//	@ID PAYLOAD    give PAYLOAD to the waiters subscribed with ID, wake only them
//	!BODY          a notice: give BODY to the Hub's notice handler, wake every waiter
//
// ID contains no space; PAYLOAD and BODY run to the end of the message and
// may be empty or contain spaces. A message matching none of these is
// treated as "*". A message targeted at an ID no local waiter has wakes no
// one. A notice reaches the handler (WithNotice) whether or not the channel
// has waiters: a forced unlock tells the forced-out holder's Client with
// one, on a channel the Client listens to while it holds (see
// internal/core, Notices).
//
// # Wake policy
//
// A mutex release publishes "1": only one waiter can take the lock, and
// waking all of them would send the whole queue to Redis to find out, once
// per release (a thundering herd). The Hub picks a waiter that has no wake
// pending, the one that has gone longest without a wake-one first, and moves
// it to the back; if every waiter already has a wake pending, the message
// changes nothing. "n:K" does the same for as many waiters as fit in K
// permits: each waiter weighs what it asks for (Subscription.SetWeight, 1 by
// default), and a waiter too heavy for what is left is skipped for a lighter
// one behind it; when none fits (K >= 1), the longest-waiting one wakes all
// the same, to find out by trying.
// A reader release or a forced unlock publishes "*": any number of waiters
// may proceed.
//
// The trade-off is that wake-one is a promise kept by the waiter: a waiter
// that was chosen must try again or pass the wake on. Subscription.Close
// passes an unreceived wake to another waiter of the channel; a waiter that
// received a wake and then gives up (its context ended) must leave through
// the primitive's leave script, which publishes again if the resource is
// free. And "one waiter" is per process: every process subscribed to the
// channel wakes one of its own, so the herd is bounded by the number of
// processes, not of waiters.
//
// # Targeted channels
//
// The library's locks do not publish a release on the name's channel,
// which every process waiting on the name hears. Each Client's waiters
// wait on the Client's own channel for the name (the name's channel
// followed by ":<client id>", in the same slot), and a script that knows
// whom to serve publishes there only: rlock's release sends "1" to the
// registered Client it wakes (which wakes its longest-waiting local
// waiter), a per-request registration's wake "@ID " to that request, and
// rfairlock's grant "@ID PAYLOAD" to the queue's head. One release is then one message to one process, however
// many wait. A script whose wake is for the caller's own process does not
// publish it but returns it, and the caller gives it to Deliver, which
// handles it as a received message. With WithLinger a channel stays
// subscribed for a while after its last waiter leaves, so that a process
// whose one worker locks in a loop does not SUBSCRIBE and UNSUBSCRIBE for
// every acquisition.
//
// # Pub/sub is a hint
//
// Redis pub/sub is fire-and-forget: a message published while the
// connection is down or being re-established is lost, and a message can race
// with a waiter that is just about to wait. So a wake is only a hint to
// re-check, and every wait also has a timer (Hub.Wait uses the poll
// interval): a lost message costs at most one interval, never a hang.
//
// The Hub narrows the gaps it can. Subscribe returns only after the server
// has confirmed the subscription, so a waiter that subscribes, then checks,
// then waits cannot miss a message published after its check. When go-redis
// re-establishes the connection and resubscribes, the Hub wakes every waiter
// of each channel as its resubscription is confirmed, and counts a
// reconnect (Stats.Reconnects).
//
// # Refusal and polling
//
// When the Hub opens its connection it subscribes to a probe channel
// (DefaultProbeChannel, see WithProbeChannel) and reads the reply before
// anything else. If the server answers with an error (an ACL without
// SUBSCRIBE, a proxy that does not support pub/sub) the Hub is refused for
// good: every Subscribe returns an error wrapping errs.ErrSubscribeRefused
// at once, Stats.Refused is true and Stats.Err is that error. If the server
// does not answer within the confirm timeout, or the connection fails,
// Subscribe returns such an error (and Stats.Err holds it) for the next 30
// seconds before it tries again. Callers that get ErrSubscribeRefused poll;
// Hub.Wait does so by itself.
//
// The probe channel stays subscribed for the Hub's life, so PUBSUB CHANNELS
// on the server lists it beside the channels that have waiters. (On Cluster
// the probe is an SSUBSCRIBE on a connection of its own, closed at once.)
//
// # Redis Cluster
//
// On a *redis.ClusterClient the Hub uses sharded pub/sub (SSUBSCRIBE, Redis
// 7.0 and later), and the scripts publish with SPUBLISH (PublishCommand): a
// release is delivered within the shard that owns the name's slot instead of
// being broadcast over the cluster bus to every node. Every channel of a
// name shares the name's hash tag, so it lives in the name's slot.
//
// The Hub keeps one subscription connection per primary that owns a channel
// waited on (Stats.Nodes), and subscribes each channel on its slot's owner.
// A channel is moved (Stats.Moves) when the server says it no longer serves
// it: a slot migrated away (the server unsubscribes the channel), a primary
// demoted by a failover (likewise), an SSUBSCRIBE answered with MOVED, or a
// connection lost (a crashed primary). The Hub asks the cluster (CLUSTER
// SLOTS) which primary serves the slot now, subscribes there, retrying with a
// pause of up to a second while the cluster settles, and wakes the channel's
// waiters twice: when the move starts and when it is confirmed, since
// messages published in between were lost. The waiters' timers bound the
// gap, as always.
//
// A cluster without sharded pub/sub (before Redis 7.0) is detected once, by
// the probe: the Hub then uses SUBSCRIBE on one connection, and the scripts
// and Publish, whose SPUBLISH fails there, publish with PUBLISH instead.
//
// # Sentinel
//
// Behind a go-redis failover client the Hub uses one SUBSCRIBE connection to
// the primary. When the primary dies, go-redis reconnects to the one the
// Sentinels promoted and the Hub wakes every waiter as its channel is
// resubscribed. A forced failover (SENTINEL FAILOVER) leaves the old primary
// running and the connection on it: go-redis does not move pub/sub
// connections. The Hub hears the new primary's messages once the old primary
// replicates from it (PUBLISH is replicated), about ten seconds on Redis 7.0;
// until then waiters re-check on their timers (the max poll interval).
package hub
