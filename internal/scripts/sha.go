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
// the caller then loads it with Load and sends the same EVALSHA once more
// (RunBySHA, and a prepared call's run). A pipeline does the same for the
// commands of it that NOSCRIPT failed (the watchdog's renewals): it loads
// their scripts on the node that answered and sends them once more.

// NoScript reports whether err is Redis's NOSCRIPT: the server does not
// have the script.
func NoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// Load loads s into rdb's script cache with SCRIPT LOAD. A ClusterClient
// sends it to every node it knows, primaries and replicas, and waits for
// all, so the primary that runs the next EVALSHA of any slot has it; an
// error from one node (a replica down) leaves the others loaded.
func Load(ctx context.Context, rdb redis.Scripter, s *redis.Script) error {
	if err := s.Load(ctx, rdb).Err(); err != nil {
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
	loaded := Load(ctx, rdb, s)
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
