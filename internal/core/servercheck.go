package core

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/obs"
)

// serverCheckTimeout bounds the startup check of the server's settings.
const serverCheckTimeout = 5 * time.Second

// closeCheckGrace is how long Close lets a running check finish.
const closeCheckGrace = time.Second

// masters is what a *redis.ClusterClient has: a way to reach every primary.
type masters interface {
	ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
}

// checkServer starts, once per Session, a look at the server's eviction
// policy in the background. Keys with a TTL are what every lease is; a
// policy that may evict them (volatile-*, allkeys-*) can delete a held lock
// before its lease ends, and the next acquire then succeeds while the
// holder still believes it holds. The check logs one warning per primary
// that has such a policy, and stays silent where CONFIG is not permitted
// (an ACL, a managed service that renames it): it can only warn.
func (s *Session) checkServer() {
	s.checkOnce.Do(func() {
		s.checks.Add(1)
		go func() {
			defer s.checks.Done()
			// Close cancels s.ctx. The check belongs to no operation: round-trip
			// counters leave it out.
			ctx, cancel := context.WithTimeout(obs.Housekeeping(s.ctx), serverCheckTimeout)
			defer cancel()
			if m, ok := s.RDB.(masters); ok {
				_ = m.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
					s.checkPolicy(ctx, c, c.Options().Addr)
					return nil
				})
				return
			}
			s.checkPolicy(ctx, s.RDB, configuredAddr(s.RDB))
		}()
	})
}

// checkPolicy reads one server's maxmemory-policy and warns if it evicts.
// The log records name the server's address, unless addr is "".
func (s *Session) checkPolicy(ctx context.Context, rdb interface {
	Process(context.Context, redis.Cmder) error
}, addr string) {
	var where []any
	if addr != "" {
		where = []any{"addr", addr}
	}
	cmd := redis.NewMapStringStringCmd(ctx, "config", "get", "maxmemory-policy")
	if err := rdb.Process(ctx, cmd); err != nil {
		s.Config.Logger.Debug("redcoord: cannot read maxmemory-policy", append(where, "err", err)...)
		return
	}
	policy := cmd.Val()["maxmemory-policy"]
	if strings.HasPrefix(policy, "volatile-") || strings.HasPrefix(policy, "allkeys-") {
		s.Config.Logger.Warn("redcoord: the server may evict keys with a TTL, and every lock and lease is one: "+
			"a held lock can vanish under memory pressure and be granted twice; set maxmemory-policy noeviction",
			append([]any{"maxmemory-policy", policy}, where...)...)
	}
}

// configuredAddr returns the address a plain *redis.Client is configured
// with, or "" when there is none to name: a Sentinel failover client (its
// options carry go-redis's placeholder "FailoverClient"; the sentinels name
// its primary) or another implementation of Redis.
func configuredAddr(rdb Redis) string {
	c, ok := rdb.(interface{ Options() *redis.Options })
	if !ok || c.Options().Addr == "FailoverClient" {
		return ""
	}
	return c.Options().Addr
}
