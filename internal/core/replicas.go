package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/backoff"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redirect"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Replicas is WithWaitReplicas: how many replicas must acknowledge each
// acquire and release, and how long WAIT waits for them. The zero value
// sends no WAIT.
type Replicas struct {
	N       int
	Timeout time.Duration // whole milliseconds, at least 1ms, when N > 0
}

// Writer returns the Scripter an acquire or release runs its script on.
// Without WaitReplicas it is s.RDB itself: nothing is added, not a round
// trip, not an allocation. With it, EVALSHA goes in one pipeline with
// WAIT, on one connection to the primary of the script's first key; when
// fewer replicas than asked acknowledge in time, the script's command fails
// with an error matching ErrNotReplicated that says how many did, and keeps
// the script's reply (see AcquireErr, ReleaseErr). The WAIT covers every
// write made before it, whoever made it (see acked.on): a script that
// finds its hold or permits there already (a retry after a lost reply, a
// grant) is covered as one that wrote them. A NOSCRIPT reply in the
// pipeline goes back to the caller, which loads the script (SCRIPT LOAD,
// sent as it is) and sends the pipeline once more (see scripts.RunBySHA).
func (s *Session) Writer() redis.Scripter {
	if s.Config.Replicas.N == 0 {
		return s.RDB
	}
	return &acked{rdb: s.RDB, r: s.Config.Replicas}
}

// AcquireErr is the error of an acquire sent on a Writer, given whether
// its reply says it took its hold or permits: a WAIT shortfall after a take
// matches ErrNotAcquired too, because the caller undoes the take; after a
// try that took nothing, it is no error (a wait goes on).
func AcquireErr(took bool, err error) error {
	if !errors.Is(err, errs.ErrNotReplicated) {
		return err
	}
	if !took {
		return nil
	}
	return &errs.Error{Sentinel: errs.ErrNotAcquired, Cause: err, Note: "the acquire was undone"}
}

// ReleaseErr is the error of a release sent on a Writer: a WAIT shortfall
// says that the release stands, and does not match ErrNotHeld.
func ReleaseErr(err error) error {
	if errors.Is(err, errs.ErrNotReplicated) {
		return errs.Noted(err, "the release stands")
	}
	return err
}

// Confirm makes sure that the replicas have a grant that another client's
// script wrote (a fair lock's hand-off, a fair semaphore's grant) and that
// the grantee learnt of by a message, without a script of its own: the
// granting script's WAIT was the releaser's. So, with WaitReplicas set,
// touch runs on a Writer and reports whether the grant still stands; the
// WAIT after it covers every earlier write of the replication stream, the
// grant included (see Writer). Confirm reports whether the grant stands,
// or a shortfall as AcquireErr does. Without WaitReplicas it returns true
// at once.
func (s *Session) Confirm(ctx context.Context,
	touch func(context.Context, redis.Scripter) (bool, error)) (bool, error) {
	if s.Config.Replicas.N == 0 {
		return true, nil
	}
	ok, err := touch(ctx, s.Writer())
	if err = AcquireErr(ok, err); err != nil || !ok {
		return false, err
	}
	return true, nil
}

// acked is the Scripter of Writer with WaitReplicas set.
type acked struct {
	rdb Redis
	r   Replicas
}

func (a *acked) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return a.run(ctx, keys, func(p redis.Pipeliner) *redis.Cmd { return p.EvalSha(ctx, sha1, keys, args...) })
}

// Eval completes redis.Scripter: the library runs every script by its SHA1
// (see scripts.RunBySHA), and never calls it.
func (a *acked) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return a.run(ctx, keys, func(p redis.Pipeliner) *redis.Cmd { return p.Eval(ctx, script, keys, args...) })
}

// The read-only calls and the script cache's are sent as they are.

func (a *acked) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return a.rdb.EvalRO(ctx, script, keys, args...)
}

func (a *acked) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return a.rdb.EvalShaRO(ctx, sha1, keys, args...)
}

func (a *acked) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return a.rdb.ScriptExists(ctx, hashes...)
}

func (a *acked) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return a.rdb.ScriptLoad(ctx, script)
}

// MasterForKey is the Cluster client's, where the writer is on one: a
// script that NOSCRIPT failed is loaded on the key's primary alone (see
// scripts.Node).
func (a *acked) MasterForKey(ctx context.Context, key string) (*redis.Client, error) {
	if c, ok := a.rdb.(interface {
		MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	}); ok {
		return c.MasterForKey(ctx, key)
	}
	return nil, errors.New("not a Cluster")
}

// pipeliner is what a pipeline is made on: a go-redis client, or one node
// of a cluster.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// run sends the script that queue adds and WAIT in one pipeline, and
// returns the script's command, failed on a shortfall (see Writer).
//
// A *redis.Client, also as a Sentinel failover client, runs a pipeline on
// one connection, which WAIT needs: it waits for the replicas to reach the
// offset of that connection's last write. A ClusterClient would send the
// keyless WAIT to any node, so on Cluster the pipeline goes to the client
// of the primary that serves the script's first key (all keys of a name
// share one slot). If the slot has moved, the primary replies MOVED (or ASK
// while it moves) without running the script; the pipeline is then sent
// again to the node named in the reply (after ASKING, for ASK).
func (a *acked) run(ctx context.Context, keys []string, queue func(redis.Pipeliner) *redis.Cmd) *redis.Cmd {
	c, ok := a.rdb.(redirect.Shards)
	if !ok || len(keys) == 0 {
		return a.on(ctx, a.rdb, false, keys, queue)
	}
	node, err := c.MasterForKey(ctx, keys[0])
	asking := false
	for attempt := 0; ; attempt++ {
		if err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		cmd := a.on(ctx, node, asking, keys, queue)
		addr, ask, again := redirect.Parse(cmd.Err())
		if attempt == redirect.Max || (addr == "" && !again) {
			return cmd
		}
		if again {
			if err := backoff.Sleep(ctx, redirect.TryAgainDelay, nil); err != nil {
				return cmd
			}
			continue
		}
		node, err = redirect.NodeAt(ctx, c, addr)
		asking = ask
	}
}

// on runs one pipeline on p: the script, the cover of its keys (see
// scripts.Cover), each after ASKING if asked, then WAIT. WAIT waits for
// the replicas to reach the connection's last propagated write (Redis 7.2
// and later, Valkey), and a script that wrote nothing propagated nothing:
// a retry that found its first run applied (its reply lost; go-redis sends
// the pipeline again, on another connection), or an acquire that found a
// grant another client's release wrote. The cover's write, which changes
// nothing, makes WAIT wait for every write before it. Without one (no
// primitive's hash among the keys: a lock released), WAIT covers what the
// connection wrote. A cover that failed (out of memory, a moved slot) is
// a shortfall: what the script found may not be on the replicas. A server
// that lacks the cover's script gets it loaded, and the cover and WAIT
// sent once more, in one more round trip; that pipeline may go out on
// another connection, whose WAIT covers none of the script's own writes,
// so both WAITs must count enough replicas.
func (a *acked) on(ctx context.Context, p pipeliner, asking bool, keys []string,
	queue func(redis.Pipeliner) *redis.Cmd) *redis.Cmd {
	pipe := p.Pipeline()
	ask := func() {
		if asking {
			_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
		}
	}
	ask()
	cmd := queue(pipe)
	cover := func() (covered *redis.Cmd, wait *redis.IntCmd) {
		if len(keys) > 0 {
			ask()
			covered = scripts.Cover(ctx, pipe, keys)
		}
		wait = redis.NewIntCmd(ctx, "wait", a.r.N, a.r.Timeout.Milliseconds())
		_ = pipe.Process(ctx, wait)
		_, _ = pipe.Exec(ctx) // each command keeps its own error
		return covered, wait
	}
	covered, wait := cover()
	waits := []*redis.IntCmd{wait}
	if covered != nil && scripts.NoScript(covered.Err()) && cmd.Err() == nil && a.short(wait) == nil {
		pipe = p.Pipeline()
		scripts.LoadCover(ctx, pipe)
		covered, wait = cover()
		waits = append(waits, wait)
	}
	if cmd.Err() != nil {
		return cmd // the script's own error says what happened
	}
	failed := covered != nil && covered.Err() != nil
	if failed && !scripts.NoScript(covered.Err()) {
		cmd.SetErr(coverErr(covered.Err()))
		return cmd
	}
	for _, w := range waits {
		if err := a.short(w); err != nil {
			cmd.SetErr(err)
			return cmd
		}
	}
	if failed { // no script even after the load
		cmd.SetErr(coverErr(covered.Err()))
	}
	return cmd
}

// coverErr is the shortfall of a cover that failed.
func coverErr(err error) error {
	return &errs.Error{Sentinel: errs.ErrNotReplicated, Op: "cover", Cause: err,
		Detail: "the write that makes WAIT cover what the script found failed"}
}

// short returns the error of a WAIT that failed, or that fewer replicas
// than asked acknowledged; nil if enough did.
func (a *acked) short(wait *redis.IntCmd) error {
	if err := wait.Err(); err != nil {
		op := fmt.Sprintf("WAIT %d %d", a.r.N, a.r.Timeout.Milliseconds())
		e := &errs.Error{Sentinel: errs.ErrNotReplicated, Op: op, Cause: err}
		if _, ok := errs.Refusal(err); ok {
			e.Also, e.Detail = []error{errs.ErrRefused}, "refused by the server"
		}
		return e
	}
	if wait.Val() < int64(a.r.N) {
		return errs.New(errs.ErrNotReplicated, "%d of %d replicas acknowledged within %v",
			wait.Val(), a.r.N, a.r.Timeout)
	}
	return nil
}
