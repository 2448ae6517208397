package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// backend is the Redis the cells run against: an embedded miniredis, one
// server, or a cluster. Each process of a cell gets its own client from it.
type backend struct {
	name  string // for the output: what ran, and how far to trust its speed
	short string // for the chart's title
	mini  *miniredis.Miniredis
	newFn func(pool int) redis.UniversalClient
	// noscript lists the commands a script may not call (see clientMicros);
	// nil where the server gives no INFO commandstats (miniredis) or hides
	// it or COMMAND: the cells then have no server time.
	noscript map[string]bool
}

// connect opens the backend cfg names and checks that it answers: a server
// that doesn't gives one error naming the address.
func connect(ctx context.Context, cfg *config) (*backend, error) {
	b := &backend{}
	var tlsConf *tls.Config
	if cfg.tls {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	var where string
	switch {
	case len(cfg.cluster) > 0:
		where = "Redis Cluster at " + strings.Join(cfg.cluster, ",")
		b.newFn = func(pool int) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{
				Addrs: cfg.cluster, Username: cfg.username, Password: cfg.password, TLSConfig: tlsConf, PoolSize: pool,
			})
		}
	case cfg.redis != "":
		where = "Redis at " + cfg.redis
		b.newFn = func(pool int) redis.UniversalClient {
			return redis.NewClient(&redis.Options{
				Addr: cfg.redis, Username: cfg.username, Password: cfg.password, TLSConfig: tlsConf, PoolSize: pool,
			})
		}
	default:
		b.mini = miniredis.NewMiniRedis()
		if err := b.mini.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("start the embedded miniredis: %w", err)
		}
		b.mini.ClockTTL(true) // leases expire on the wall clock, as on a server
		b.name = "embedded miniredis (in this process): figures show behaviour, not production speed"
		b.short = "embedded miniredis"
		addr := b.mini.Addr()
		b.newFn = func(pool int) redis.UniversalClient {
			// miniredis does not know CLIENT SETINFO.
			return redis.NewClient(&redis.Options{Addr: addr, PoolSize: pool, DisableIdentity: true})
		}
		return b, nil
	}
	rdb := b.newFn(1)
	defer rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := rdb.Info(pctx, "server").Result()
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %w", where, err)
	}
	b.name, b.short = where, where
	if v := infoField(info, "redis_version"); v != "" {
		b.name += " (redis " + v + ")"
	}
	if _, err := readCommandStats(pctx, rdb); err == nil {
		b.noscript, _ = noScript(pctx, rdb)
	}
	return b, nil
}

// client returns a new client for one process, with a pool big enough for
// its workers' commands and the watchdog's.
func (b *backend) client(workers int) redis.UniversalClient {
	return b.newFn(workers + 4)
}

// close stops the embedded miniredis, if any.
func (b *backend) close() {
	if b.mini != nil {
		b.mini.Close()
	}
}

// cleanup deletes every key under prefix: the run's locks, fences, markers
// and stock counters. On a cluster it scans every master.
func (b *backend) cleanup(ctx context.Context, prefix string) error {
	rdb := b.newFn(2)
	defer rdb.Close()
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			if err := c.Del(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, scan)
	case *redis.Client:
		return scan(ctx, c)
	}
	return nil
}

// infoField returns one field of an INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
