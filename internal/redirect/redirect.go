// Package redirect follows Redis Cluster's redirections for the writes
// that redcoord sends to one node's client itself rather than through the
// *redis.ClusterClient (which would follow them on its own): a script with
// WAIT after it (WithWaitReplicas), and the watchdog's renewals then.
package redirect

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

// Shards is what a *redis.ClusterClient has: the client of the primary that
// serves a key's slot, and every node it knows (ForEachShard reloads its
// view of the cluster first).
type Shards interface {
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	ForEachShard(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
}

// Max bounds how many MOVED, ASK and TRYAGAIN replies one script
// follows on Cluster, as go-redis's own MaxRedirects (3 by default) does.
const Max = 3

// TryAgainDelay is the wait before a script that got TRYAGAIN (its slot is
// migrating, its keys split between two nodes) is sent again.
const TryAgainDelay = 20 * time.Millisecond

// Parse reads a cluster redirection from a script's error: the node to
// send it to, and whether ASKING must come first (MOVED 3999
// 127.0.0.1:6381, ASK 3999 127.0.0.1:6381); or again, for TRYAGAIN.
func Parse(err error) (addr string, ask, again bool) {
	if err == nil {
		return "", false, false
	}
	f := strings.Fields(err.Error())
	switch {
	case len(f) == 3 && f[0] == "MOVED":
		return f[2], false, false
	case len(f) == 3 && f[0] == "ASK":
		return f[2], true, false
	case len(f) > 0 && f[0] == "TRYAGAIN":
		return "", false, true
	}
	return "", false, false
}

// NodeAt returns the client of the cluster node at addr, after reloading
// the cluster's view, which also points MasterForKey at the slot's new
// primary.
func NodeAt(ctx context.Context, c Shards, addr string) (*redis.Client, error) {
	var (
		mu    sync.Mutex // ForEachShard calls fn concurrently
		found *redis.Client
	)
	err := c.ForEachShard(ctx, func(_ context.Context, n *redis.Client) error {
		if n.Options().Addr == addr {
			mu.Lock()
			found = n
			mu.Unlock()
		}
		return nil
	})
	if err == nil && found == nil {
		err = &errs.Error{Detail: fmt.Sprintf("the cluster redirected a write to %s, a node it does not list", addr)}
	}
	return found, err
}
