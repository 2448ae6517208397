package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/core"
)

// watch prints the state of the name args[0] at the start and again on
// every change, until -for has passed or SIGINT. It reads the state at
// each message on the name's channels and at least every -interval: a
// change that publishes nothing (an uncontended Lock) is seen by the
// interval's read.
func watch(ctx context.Context, e *env, args []string) error {
	name := args[0]
	if err := checkName(name); err != nil {
		return err
	}
	if e.cfg.forDur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.forDur)
		defer cancel()
	}
	l := listen(ctx, e, name)
	defer l.close()
	msgs := l.messages()
	tick := time.NewTicker(e.cfg.interval)
	defer tick.Stop()
	last := ""
	seen := map[string]time.Time{} // each waiter, by request (a writer: by owner), when watch first saw it
	for {
		rctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
		st, err := readOne(rctx, e, name)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil // -for has passed, or SIGINT
		case err != nil && !errors.Is(err, errNotFound):
			return err
		}
		l.follow(ctx, st)
		ages(st, seen)
		if fp := fingerprint(st); fp != last {
			last = fp
			if err := showChange(e, st); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-msgs:
		}
	}
}

// ages fills the SeenMS of each waiter whose keys keep no age (AgeMS)
// from when watch first saw it, and forgets the waiters that are gone.
func ages(st *State, seen map[string]time.Time) {
	now := map[string]bool{}
	for _, ws := range [][]Waiter{st.Queue, st.WaitingWriters} {
		for i := range ws {
			if ws[i].AgeMS != nil {
				continue
			}
			k := ws[i].Request + "/" + ws[i].Owner
			now[k] = true
			first, ok := seen[k]
			if !ok {
				first, seen[k] = st.ServerTime, st.ServerTime
			}
			ws[i].SeenMS = st.ServerTime.Sub(first).Milliseconds()
		}
	}
	for k := range seen {
		if !now[k] {
			delete(seen, k)
		}
	}
}

// showChange prints st as one change: a compact JSON document on one line
// with -json, or a time line and the state as inspect prints it.
func showChange(e *env, st *State) error {
	if e.cfg.json {
		return json.NewEncoder(e.stdout).Encode(st)
	}
	fmt.Fprintf(e.stdout, "--- %s\n", st.ServerTime.Format(time.RFC3339Nano))
	if !st.InUse() && st.Token == 0 && len(st.Errors) == 0 {
		fmt.Fprintf(e.stdout, "%s: no state (free, no keys)\n", st.Name)
		return nil
	}
	return printState(e.stdout, st)
}

// fingerprint returns st without what changes with every read (the server
// time, remaining leases and heartbeats: only whether each is still
// alive), so that equal fingerprints mean no change.
func fingerprint(st *State) string {
	c := *st
	c.ServerTime = time.Time{}
	c.Holders = append([]Holder(nil), st.Holders...)
	for i := range c.Holders {
		c.Holders[i].RemainingMS = min(c.Holders[i].RemainingMS, 1)
	}
	c.Queue = aliveOnly(st.Queue)
	c.WaitingWriters = aliveOnly(st.WaitingWriters)
	c.Registrations = append([]Registration(nil), st.Registrations...)
	for i := range c.Registrations {
		c.Registrations[i].HeartbeatMS = min(c.Registrations[i].HeartbeatMS, 1)
	}
	if st.Rate != nil {
		r := *st.Rate
		r.AheadMS = 0
		c.Rate = &r
	}
	b, _ := json.Marshal(&c) // plain fields cannot fail to encode
	return string(b)
}

// aliveOnly returns ws with each heartbeat cut to whether it is alive,
// and without its age or the time watch has seen it.
func aliveOnly(ws []Waiter) []Waiter {
	out := append([]Waiter(nil), ws...)
	for i := range out {
		out[i].HeartbeatMS, out[i].AgeMS, out[i].SeenMS = min(out[i].HeartbeatMS, 1), nil, 0
	}
	return out
}

// listener hears the name's channels: outside Cluster, every channel of
// the name (PSUBSCRIBE); on Cluster, where messages are sharded and a
// pattern hears none, the name's broadcast channels and the wake channels
// of each Client that the state shows (SSUBSCRIBE), added as they appear.
type listener struct {
	ps      *redis.PubSub // nil: the server refused; watch reads every -interval only
	sharded bool
	base    string          // "<prefix>:{<name>}:"
	heard   map[string]bool // the channels subscribed to (Cluster)
}

// listen subscribes to the name's channels. Where the server refuses, it
// says so on stderr and returns a listener without messages.
func listen(ctx context.Context, e *env, name string) *listener {
	l := &listener{base: e.cfg.prefix + ":{" + name + "}:", heard: map[string]bool{}}
	if e.conn.cluster != nil {
		l.sharded = true
		chans := l.fresh([]core.Part{core.ChanName, core.ChanSem, core.ChanLatch}, "")
		l.ps = e.conn.cluster.SSubscribe(ctx, chans...)
	} else {
		l.ps = e.conn.rdb.PSubscribe(ctx, escapeGlob(l.base)+"*")
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	if _, err := l.ps.Receive(rctx); err != nil {
		_ = l.ps.Close()
		l.ps = nil
		if ctx.Err() == nil {
			fmt.Fprintf(e.stderr, "redcoord watch: cannot subscribe (%v); reading every %v\n", explain(err), e.cfg.interval)
		}
	}
	return l
}

// messages returns the channel of messages; nil (never ready) without a
// subscription.
func (l *listener) messages() <-chan *redis.Message {
	if l.ps == nil {
		return nil
	}
	return l.ps.Channel()
}

// follow subscribes, on Cluster, to the wake channels of the Clients that
// st shows, so that a grant or a wake to one of them is heard.
func (l *listener) follow(ctx context.Context, st *State) {
	if l.ps == nil || !l.sharded {
		return
	}
	clients := map[string]bool{}
	for _, h := range st.Holders {
		clients[h.Client] = true
	}
	for _, w := range append(append([]Waiter(nil), st.Queue...), st.WaitingWriters...) {
		clients[w.Client] = true
	}
	for _, r := range st.Registrations {
		clients[r.Client] = true
	}
	var chans []string
	for c := range clients {
		if c != "" {
			chans = append(chans, l.fresh([]core.Part{core.ChanNameClient, core.ChanWritersClient, core.ChanSemClient}, c)...)
		}
	}
	if len(chans) > 0 {
		_ = l.ps.SSubscribe(ctx, chans...) // a refusal leaves the interval's reads
	}
}

// fresh returns the channels of parts with tail that are not yet heard,
// marking them heard.
func (l *listener) fresh(parts []core.Part, tail string) []string {
	var out []string
	for _, p := range parts {
		ch := l.base + core.Describe(p).Part
		if tail != "" {
			ch += ":" + tail
		}
		if !l.heard[ch] {
			l.heard[ch] = true
			out = append(out, ch)
		}
	}
	return out
}

func (l *listener) close() {
	if l.ps != nil {
		_ = l.ps.Close()
	}
}
