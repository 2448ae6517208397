package redcoord

import (
	"context"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/pubsub"
)

// Redis is what redcoord needs of a go-redis client: *redis.Client (also as
// returned by redis.NewFailoverClient for Sentinel) and *redis.ClusterClient
// satisfy it, and so does a wrapper of either.
type Redis interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipeline() redis.Pipeliner
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Client is one session with Redis: it owns a client id, the pub/sub Hub
// that wakes waiters, and the watchdog that renews every held lease. Make one
// per process and share it; every primitive takes it first. It is safe for
// concurrent use.
type Client struct {
	session // for the module's own packages (internal/core.Of)
	s       *core.Session
}

// session is unexported, so that the embedded field is not part of the API.
type session = core.Ref

// New returns a Client on rdb. It does no I/O: the Hub and the watchdog start
// on first use. It returns an ErrInvalidArgument naming the first bad
// argument or option.
func New(rdb Redis, opts ...Option) (*Client, error) {
	if rdb == nil || isNilPointer(rdb) {
		return nil, errs.Invalid("rdb", "must not be nil")
	}
	o := defaults()
	if err := core.ApplyOptions(&o, opts); err != nil {
		return nil, err
	}
	if r := o.Replicas; r.N > 0 && r.Timeout >= o.TTL/3 {
		return nil, errs.Invalid("WithWaitReplicas", "timeout %v must be under a third of the lease TTL %v: "+
			"the watchdog renews every %v, each renewal with a WAIT", r.Timeout, o.TTL, o.TTL/3)
	}
	s, err := core.New(rdb, o.Config)
	if err != nil {
		return nil, err
	}
	return &Client{session: core.NewRef(s), s: s}, nil
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// ID returns the client id: 128 random bits, hex. Owner ids of the Client's
// handles are "<id>:<n>".
func (c *Client) ID() string { return c.s.ID }

// LeaseTTL returns the lease of watchdog-renewed holds.
func (c *Client) LeaseTTL() time.Duration { return c.s.Config.TTL }

// Hub returns the Client's pub/sub Hub, creating it on first use, for users
// who replace their own spin-waits with Hub.Wait. With WithPolling it returns
// nil and no error; after Close, ErrClosed.
func (c *Client) Hub() (*pubsub.Hub, error) {
	h, err := c.s.Hub()
	return (*pubsub.Hub)(h), err // the same Hub, seen through its public methods
}

// Close stops the watchdog and the Hub and waits for their goroutines to
// exit, bounded by ctx. It releases nothing: holds still held expire by
// lease, at most one lease TTL later. A hold that the watchdog renewed is
// no longer kept, so Close ends it for its handle before it returns: its
// Lost closes and its contexts (Context) are cancelled with the cause
// ErrClosed, as are a MultiMutex's, a RedLock's left with fewer than a
// majority of open Clients, and a leader's. A hold with a fixed lease is
// kept until that lease ends. Waits in progress return ErrClosed; later
// calls on the Client's primitives return ErrClosed. Calling Close again
// returns nil.
func (c *Client) Close(ctx context.Context) error { return c.s.Close(ctx) }
