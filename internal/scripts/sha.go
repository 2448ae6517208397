package scripts

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Every script is run by its SHA1 (EVALSHA), never by sending its body
// with EVAL: Redis 7.4 and later may evict a script that EVAL loaded,
// never one loaded by SCRIPT LOAD. A server that lacks the script (it
// restarted, a replica took over, or SCRIPT FLUSH ran) answers NOSCRIPT;
// the caller then loads it where the EVALSHA runs (Load) and sends the
// same EVALSHA once more (RunBySHA, and a prepared call's run). A pipeline
// does the same for the commands of it that NOSCRIPT failed (the
// watchdog's renewals).

// NoScript reports whether err is Redis's NOSCRIPT: the server does not
// have the script.
func NoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// keyed is what a *redis.ClusterClient has (and core's WithWaitReplicas
// writer on one): the primary that serves a key's slot.
type keyed interface {
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
}

// Node returns where an EVALSHA on key through rdb runs, to load a script
// on, and its address: on a Cluster the primary that serves key's slot,
// so that a load waits for no other node (a ClusterClient's own SCRIPT
// LOAD waits for every node, one slow or down included); otherwise, for
// a script without keys, or if the Cluster's slots are not known, rdb
// itself and "".
func Node(ctx context.Context, rdb redis.Scripter, key string) (redis.Scripter, string) {
	if c, ok := rdb.(keyed); ok && key != "" {
		if m, err := c.MasterForKey(ctx, key); err == nil {
			return m, m.Options().Addr
		}
	}
	return rdb, ""
}

// Load loads s with SCRIPT LOAD where an EVALSHA on key through rdb runs
// (see Node).
func Load(ctx context.Context, rdb redis.Scripter, s *redis.Script, key string) error {
	node, _ := Node(ctx, rdb, key)
	return LoadOn(ctx, node, s)
}

// LoadOn loads s with SCRIPT LOAD on node.
func LoadOn(ctx context.Context, node redis.Scripter, s *redis.Script) error {
	if err := s.Load(ctx, node).Err(); err != nil {
		return fmt.Errorf("loading the script (SCRIPT LOAD) after NOSCRIPT: %w", err)
	}
	return nil
}

// RunBySHA runs s on rdb by its SHA1; on NOSCRIPT it loads s (see Load)
// and runs it once more. It returns the command as s.EvalSha does (see
// Again for its error when the second run finds no script either).
func RunBySHA(ctx context.Context, rdb redis.Scripter, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := s.EvalSha(ctx, rdb, keys, args...)
	if !NoScript(cmd.Err()) {
		return cmd
	}
	loaded := Load(ctx, rdb, s, firstKey(keys))
	return Again(loaded, s.EvalSha(ctx, rdb, keys, args...))
}

// Again returns cmd, the EVALSHA sent once more after Load returned
// loaded: if it found no script either and the load failed (a refused
// SCRIPT LOAD, a node down), the load's error replaces NOSCRIPT, which
// would not say why.
func Again(loaded error, cmd *redis.Cmd) *redis.Cmd {
	if loaded != nil && NoScript(cmd.Err()) {
		cmd.SetErr(loaded)
	}
	return cmd
}

// firstKey returns keys[0], or "" when there are none.
func firstKey(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}
