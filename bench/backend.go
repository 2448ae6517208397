package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// backend is the Redis the cells run against: a redis-server the bench
// started, an embedded miniredis, a server of the user's, or a cluster.
// Each Client of a cell gets its own go-redis client from it.
type backend struct {
	name  string // for the output: what ran, and how far to trust its speed
	short string // for the chart's title
	note  string // for stderr: the server the bench started, or why miniredis and what that changes; "" for the user's
	mini  *miniredis.Miniredis
	local *localServer // the redis-server the bench started, if it did
	newFn func(pool int) redis.UniversalClient
	// noscript lists the commands a script may not call (see clientMicros);
	// nil where the server gives no INFO commandstats (miniredis) or hides
	// it or COMMAND: the cells then have no server time.
	noscript map[string]bool
}

// connect opens the backend cfg names, starting it if the bench is to, and
// checks that it answers: a server that doesn't gives one error naming the
// address.
func connect(ctx context.Context, cfg *config) (*backend, error) {
	b := &backend{}
	if cfg.start == "redis-server" {
		if err := b.startServer(ctx); err != nil {
			return nil, err
		}
		v, err := b.check(ctx, "redis-server at "+b.local.addr)
		if err != nil {
			b.close()
			return nil, err
		}
		b.name += ", started for this run"
		b.note = fmt.Sprintf("bench: started %s %s on %s for this run; it stops when the run ends "+
			"(-redis host:port: a server of yours; -start miniredis: the embedded one)", b.local.bin, v, b.local.addr)
		return b, nil
	}
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
	default: // start is miniredis
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
		if cfg.fallback {
			b.note = "bench: no redis-server on PATH: running on the embedded miniredis, in this process. " +
				"It serves one command at a time, on the CPU the workers use, and keeps no server time: " +
				"the figures show how the locks behave, not how fast they are, and cells run " + cfg.duration.String() +
				". For a real server: apt-get install redis-server, or -redis host:port"
		}
		return b, nil
	}
	if _, err := b.check(ctx, where); err != nil {
		return nil, err
	}
	return b, nil
}

// startServer starts a redis-server, found on PATH, for the run, and
// points b's clients at it.
func (b *backend) startServer(ctx context.Context) error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("-start redis-server: %w; install it (apt-get install redis-server) or use -start miniredis", err)
	}
	if b.local, err = startRedisServer(ctx, bin); err != nil {
		return fmt.Errorf("start a redis-server for the run: %w", err)
	}
	addr := b.local.addr
	b.newFn = func(pool int) redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: addr, PoolSize: pool})
	}
	return nil
}

// check asks the server at where (b's clients' address) for its version,
// which it returns and puts in b's name, and whether it shows the time it
// spends on commands.
func (b *backend) check(ctx context.Context, where string) (string, error) {
	rdb := b.newFn(1)
	defer rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := rdb.Info(pctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("cannot reach %s: %w", where, err)
	}
	b.name, b.short = where, where
	server, v := serverVersion(info)
	if v != "" {
		b.name += " (" + server + " " + v + ")"
	}
	if _, err := readCommandStats(pctx, rdb); err == nil {
		b.noscript, _ = noScript(pctx, rdb)
	}
	return v, nil
}

// client returns a new go-redis client for one Client of a cell, with a
// pool big enough for its workers' commands and the watchdog's.
func (b *backend) client(workers int) redis.UniversalClient {
	return b.newFn(workers + 4)
}

// close stops the server the bench started, if it did.
func (b *backend) close() {
	if b.mini != nil {
		b.mini.Close()
	}
	if b.local != nil {
		b.local.stop()
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

// serverVersion returns the server's name, redis or valkey, and its
// version, from INFO server. Valkey gives as redis_version the Redis
// version it is compatible with (7.2.4 for Valkey 8), and its own name and
// version in server_name and valkey_version.
func serverVersion(info string) (name, version string) {
	if infoField(info, "server_name") == "valkey" {
		return "valkey", infoField(info, "valkey_version")
	}
	return "redis", infoField(info, "redis_version")
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
