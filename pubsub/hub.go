package pubsub

import (
	"context"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hub"
)

// ErrSubscribeRefused is what Stats.Err matches (errors.Is) while the Hub
// cannot subscribe and its waits poll: the server refused SUBSCRIBE (an
// ACL, a proxy without pub/sub) or did not confirm it in time.
var ErrSubscribeRefused = errs.ErrSubscribeRefused

// Hub is defined on the internal Hub, not on a struct that points to one,
// so that the Client, outside this package, can convert its own Hub to it
// for free without an exported constructor. A defined type has none of the
// internal type's methods: it has only the ones below.

// Hub wakes the waits of one redcoord Client when a message is published
// on the channel they wait on. Get it from (*redcoord.Client).Hub; a Hub
// declared any other way is not usable. It is safe for concurrent use.
type Hub hub.Hub

// Wait replaces a spin-wait on a condition kept in Redis. It subscribes to
// channel, then calls check; while check reports false it waits for a
// message on channel (see Publish), the Client's max poll interval, or the
// end of ctx, and calls check again. A lost or missing message costs at
// most one poll interval.
//
// Wait returns nil once check reports true, check's error as it is, an
// error wrapping ctx.Err(), or redcoord.ErrClosed once the Client is
// closed. A check that fails because Redis is unreachable (a connection
// refused, LOADING...) is called again after a pause, as a blocked Lock
// tries again (see "Outages" in package redcoord); a Wait whose ctx ends
// meanwhile names the last failure. A nil check is a
// redcoord.ErrInvalidArgument. If the server refuses the subscription,
// Wait polls: it still works, only slower (see Stats.Err). When Wait
// returns, it has left the channel.
func (h *Hub) Wait(ctx context.Context, channel string, check func(ctx context.Context) (bool, error)) error {
	return (*hub.Hub)(h).Wait(ctx, channel, check)
}

// Stats is a snapshot of a Hub, for tests and operators.
type Stats struct {
	Channels   int   // channels with at least one waiter
	Waiters    int   // waits in progress, the library's own included
	Reconnects int64 // times the connection was re-established (on Cluster: a shard connection lost)
	Refused    bool  // the server refused SUBSCRIBE for good: every wait polls
	// Err is why waits poll, nil while the Hub can subscribe: an error
	// matching ErrSubscribeRefused that wraps the server's reply. It stays
	// set once the server refused (Refused); after a failure to connect or
	// to confirm, until the Hub tries again, 30 seconds later.
	Err error
	// Commands is how many SUBSCRIBE and UNSUBSCRIBE commands (SSUBSCRIBE
	// and SUNSUBSCRIBE on Cluster) the Hub has sent, its probe's included:
	// traffic that go-redis hooks do not see.
	Commands int64
	// Nodes is how many sharded connections are open: one per primary that
	// owns a channel waited on, 0 outside Cluster.
	Nodes int
	// Moves is how many times a channel was resubscribed on another
	// connection: its slot moved, its primary failed over or its connection
	// was lost (Cluster only).
	Moves int64
}

// Stats returns a snapshot of the Hub's state.
func (h *Hub) Stats() Stats {
	// A conversion, not a copy field by field: it stops compiling if the two
	// structs drift apart.
	return Stats((*hub.Hub)(h).Stats())
}
