package lease

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/redirect"
	"github.com/redcoord/redcoord/internal/scripts"
)

// renew renews batch, one pipeline per node, and reports for each lease
// whether its renewal was acknowledged (always, without Replicas). On
// Cluster with Replicas, each lease's renewal goes to the client of the
// primary of its first key, the nodes' pipelines run at once, and a renewal
// answered MOVED or ASK is sent on to the node named, up to redirect.Max
// times, as the ClusterClient would; any failure has the ClusterClient
// reload its slots for the next tick. Without Replicas, go-redis splits one
// pipeline by node and follows redirections itself.
func (w *Watchdog) renew(ctx context.Context, batch []*Lease) ([]*redis.Cmd, []bool) {
	cmds, acked := make([]*redis.Cmd, len(batch)), make([]bool, len(batch))
	c, ok := w.rdb.(redirect.Shards)
	if w.replicas.N == 0 || !ok {
		w.renewOn(ctx, w.rdb, false, batch, all(len(batch)), cmds, acked)
		return cmds, acked
	}
	type target struct {
		node *redis.Client
		ask  bool
	}
	todo := make(map[target][]int)
	for i, l := range batch {
		node, err := c.MasterForKey(ctx, l.r.Keys[0])
		if err != nil {
			cmds[i] = redis.NewCmd(ctx)
			cmds[i].SetErr(err)
			continue
		}
		todo[target{node, false}] = append(todo[target{node, false}], i)
	}
	for round := 0; len(todo) > 0; round++ {
		var wg sync.WaitGroup
		for to, idx := range todo {
			wg.Go(func() { w.renewOn(ctx, to.node, to.ask, batch, idx, cmds, acked) })
		}
		wg.Wait()
		todo = make(map[target][]int)
		if round == redirect.Max {
			break
		}
		for i, cmd := range cmds {
			addr, ask, _ := redirect.Parse(cmd.Err())
			if addr == "" {
				continue
			}
			node, err := redirect.NodeAt(ctx, c, addr)
			if err != nil {
				cmd.SetErr(err)
				continue
			}
			todo[target{node, ask}] = append(todo[target{node, ask}], i)
		}
	}
	for _, cmd := range cmds {
		if cmd.Err() != nil {
			if r, ok := w.rdb.(interface{ ReloadState(context.Context) }); ok {
				r.ReloadState(ctx)
			}
			break
		}
	}
	return cmds, acked
}

// all returns the indexes 0 to n-1.
func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// renewOn sends the renewals of batch[idx] in one pipeline on p, each after
// ASKING if ask, ending it with WAIT when Replicas asks for some; if Redis
// lost scripts (a restart, SCRIPT FLUSH, a failover) it loads the ones that
// NOSCRIPT failed on p, and sends those renewals once more, with WAIT
// again (see scripts.NoScript). It sets cmds[i] and acked[i] for i in idx.
func (w *Watchdog) renewOn(ctx context.Context, p Pipeliner, ask bool, batch []*Lease, idx []int, cmds []*redis.Cmd,
	acked []bool) {
	send := func(idx []int) {
		pipe := p.Pipeline()
		for _, i := range idx {
			l := batch[i]
			if ask {
				_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
			}
			cmds[i] = l.r.Script.EvalSha(ctx, pipe, l.r.Keys, l.r.Arguments()...)
		}
		var wait *redis.IntCmd
		if w.replicas.N > 0 {
			wait = redis.NewIntCmd(ctx, "wait", w.replicas.N, w.replicas.Timeout.Milliseconds())
			_ = pipe.Process(ctx, wait)
		}
		_, _ = pipe.Exec(ctx)
		ok := wait == nil || (wait.Err() == nil && wait.Val() >= int64(w.replicas.N))
		for _, i := range idx {
			acked[i] = ok
		}
	}
	send(idx)
	type load struct {
		s    *redis.Script
		node string // the address of the node it is loaded on (see scripts.Node)
	}
	var again []int
	var loads []load
	var loaded map[load]error // each script once per node
	for _, i := range idx {
		if !scripts.NoScript(cmds[i].Err()) {
			continue
		}
		again = append(again, i)
		if loaded == nil {
			loaded = make(map[load]error)
		}
		node, addr := scripts.Node(ctx, p, batch[i].r.Keys[0])
		k := load{batch[i].r.Script, addr}
		if _, ok := loaded[k]; !ok {
			loaded[k] = scripts.LoadOn(ctx, node, k.s)
		}
		loads = append(loads, k)
	}
	if len(again) == 0 {
		return
	}
	send(again)
	for j, i := range again {
		scripts.Again(loaded[loads[j]], cmds[i])
	}
}
