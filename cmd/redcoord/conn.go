package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// conn is the connection to the deployment: one client, and the primaries
// that hold the keys.
type conn struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // nil outside Cluster
	where   string               // how errors name the deployment
}

// connect makes the client the flags describe and checks, within -timeout,
// that the server answers.
func (cfg *config) connect(ctx context.Context) (*conn, error) {
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	addrs := cfg.addrList()
	c := &conn{}
	switch {
	case cfg.cluster:
		c.cluster = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: addrs, Username: cfg.user, Password: cfg.secret(), TLSConfig: tc,
			DialTimeout: cfg.timeout, ReadTimeout: cfg.timeout, WriteTimeout: cfg.timeout,
		})
		c.rdb, c.where = c.cluster, "the Cluster at "+strings.Join(addrs, ",")
	case cfg.sentinel != "":
		c.rdb = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: cfg.sentinel, SentinelAddrs: addrs,
			Username: cfg.user, Password: cfg.secret(), TLSConfig: tc,
			DialTimeout: cfg.timeout, ReadTimeout: cfg.timeout, WriteTimeout: cfg.timeout,
		})
		c.where = fmt.Sprintf("master %q of the sentinels at %s", cfg.sentinel, strings.Join(addrs, ","))
	default:
		c.rdb = redis.NewClient(&redis.Options{
			Addr: addrs[0], Username: cfg.user, Password: cfg.secret(), TLSConfig: tc,
			DialTimeout: cfg.timeout, ReadTimeout: cfg.timeout, WriteTimeout: cfg.timeout,
		})
		c.where = addrs[0]
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		_ = c.rdb.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %w", c.where, explain(err))
	}
	return c, nil
}

func (c *conn) close() { _ = c.rdb.Close() }

// eachPrimary calls f with a client of each primary in turn (the one
// server outside Cluster) and returns the first error.
func (c *conn) eachPrimary(ctx context.Context, f func(ctx context.Context, node *redis.Client) error) error {
	if c.cluster == nil {
		return f(ctx, c.rdb.(*redis.Client))
	}
	var mu sync.Mutex
	var nodes []*redis.Client
	err := c.cluster.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
		mu.Lock() // ForEachMaster calls this on every primary at once
		defer mu.Unlock()
		nodes = append(nodes, node) // collected, so that f runs on one primary at a time
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the Cluster's primaries: %w", explain(err))
	}
	for _, n := range nodes {
		if err := f(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// primaryFor returns a client of the primary that holds key.
func (c *conn) primaryFor(ctx context.Context, key string) (*redis.Client, error) {
	if c.cluster == nil {
		return c.rdb.(*redis.Client), nil
	}
	n, err := c.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("finding the primary of %s: %w", key, explain(err))
	}
	return n, nil
}

// explain adds to err what it means for the operator, when it is one the
// server gives for a known cause.
func explain(err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "NOPERM"):
		return fmt.Errorf("%w (the server's ACL refuses it to this user: -user, or ACL SETUSER ... +@read +scan)", err)
	case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"):
		return fmt.Errorf("%w (check -user and -password, or $REDISCLI_AUTH)", err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (no answer within -timeout)", err)
	}
	return err
}
