package core

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/obs"
	"github.com/redcoord/redcoord/internal/redirect"
)

// serverCheckTimeout bounds the startup check of the server's settings and
// the commands it allows.
const serverCheckTimeout = 5 * time.Second

// closeCheckGrace is how long Close lets a running check finish.
const closeCheckGrace = time.Second

// masters is what a *redis.ClusterClient has: a way to reach every primary.
type masters interface {
	ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
	redirect.Shards
}

// checkServer starts, once per Session, a look at the server in the
// background: its eviction policy, and the commands the library needs that
// it refuses (see checkCommands). Keys with a TTL are what every lease is;
// a policy that may evict them (volatile-*, allkeys-*) can delete a held
// lock before its lease ends, and the next acquire then succeeds while the
// holder still believes it holds. The check logs one warning per primary
// that has such a policy, and stays silent where CONFIG is not permitted
// (an ACL, a managed service that renames it): it can only warn. It logs
// one warning per command refused, naming the primaries that refuse it.
// On Cluster, it checks every primary at once.
func (s *Session) checkServer() {
	s.checkOnce.Do(func() {
		s.checks.Add(1)
		go func() {
			defer s.checks.Done()
			// Close cancels s.ctx. The check belongs to no operation: round-trip
			// counters leave it out.
			ctx, cancel := context.WithTimeout(obs.Housekeeping(s.ctx), serverCheckTimeout)
			defer cancel()
			var r refusals
			defer s.warn(&r)
			if m, ok := s.RDB.(masters); ok {
				_ = m.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
					addr := c.Options().Addr
					s.checkPolicy(ctx, c, addr)
					if name := s.clusterCheckName(ctx, m, addr); name != "" {
						s.checkCommands(ctx, c, c.SSubscribe, name, addr, &r)
					}
					return nil
				})
				return
			}
			addr := configuredAddr(s.RDB)
			s.checkPolicy(ctx, s.RDB, addr)
			s.checkCommands(ctx, s.RDB, s.RDB.Subscribe, checkName, addr, &r)
		}()
	})
}

// checkPolicy reads one server's maxmemory-policy and warns if it evicts.
// The log records name the server's address, unless addr is "".
func (s *Session) checkPolicy(ctx context.Context, rdb processor, addr string) {
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
