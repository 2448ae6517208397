package core

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/redirect"
	"github.com/redcoord/redcoord/internal/scripts"
)

// checkName is the name under which the server check's probes run: its key
// and channel are "P:{redcoord-check}:probe" and "…:probe-ch". On Cluster,
// each primary's is "redcoord-check-<i>", the first i whose slot it serves.
const checkName = "redcoord-check"

// maxCheckNames bounds the names tried for a primary's slot: four times
// the slots, enough for a primary that serves one slot.
const maxCheckNames = 4 * 16384

// refusals gathers what the server check finds refused, over the
// primaries of a Cluster, which are checked at once.
type refusals struct {
	mu    sync.Mutex
	found map[string]*refusal // by command, as errs.Refusal names it
}

// refusal is one command refused: the servers that refuse it and the
// first one's reply.
type refusal struct {
	addrs []string
	reply string
}

// add records what one server refused.
func (r *refusals) add(addr string, refused map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for command, reply := range refused {
		if r.found == nil {
			r.found = map[string]*refusal{}
		}
		f := r.found[command]
		if f == nil {
			f = &refusal{reply: reply}
			r.found[command] = f
		}
		if addr != "" {
			f.addrs = append(f.addrs, addr)
		}
	}
}

// warn logs one warning per command refused, in the order of errs.Needs:
// the command, what stops working, what to do, the servers and the reply.
func (s *Session) warn(r *refusals) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, need := range errs.Needs() {
		f := r.found[need.Command]
		if f == nil {
			continue
		}
		attrs := []any{"command", strings.ToUpper(strings.ReplaceAll(need.Command, "|", " ")), "reply", f.reply}
		if len(f.addrs) > 0 {
			attrs = append(attrs, "addr", strings.Join(f.addrs, ","))
		}
		s.Config.Logger.Warn("redcoord: the server refuses "+need.Name+": "+need.Breaks+"; "+need.Fix, attrs...)
	}
}

// checkCommands finds which commands the library needs the server that p
// sends to refuses (see errs.Needs) and adds them to r under addr: what
// running the scripts takes (scripts.Probe), SUBSCRIBE (SSUBSCRIBE on
// Cluster) unless the Session polls, and WAIT when it has WaitReplicas.
// name is the name whose key and channel the probes use. A server it
// cannot ask (a connection lost, the check's time up) is logged at debug.
func (s *Session) checkCommands(ctx context.Context, p processor, sub subscriber, name, addr string,
	r *refusals) {
	pub := s.PublishCommand()
	channel := s.Key(name, ChanCheck)
	refused, err := scripts.Probe(ctx, p, s.Key(name, KeyCheck), pub, channel)
	if err == nil && !s.Config.Polling {
		command := "subscribe"
		if s.Cluster() {
			command = "ssubscribe"
		}
		err = probeSubscribe(ctx, sub, command, channel, refused)
	}
	if err == nil && s.Config.Replicas.N > 0 {
		// WAIT for no replica answers at once; 1ms bounds it all the same.
		if werr := p.Process(ctx, redis.NewIntCmd(ctx, "wait", 0, 1)); werr != nil {
			if _, ok := errs.Refusal(werr); ok {
				refused["wait"] = werr.Error()
			} else {
				err = werr
			}
		}
	}
	if err != nil {
		s.Config.Logger.Debug("redcoord: cannot finish the check of the commands the server allows",
			"addr", addr, "err", err)
	}
	r.add(addr, refused)
}

// processor sends one command.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// subscriber subscribes as the Hub does: Subscribe, or SSubscribe on a
// Cluster's primary.
type subscriber func(ctx context.Context, channels ...string) *redis.PubSub

// probeSubscribe subscribes to channel with sub, command ("subscribe" or
// "ssubscribe"), and reads the server's answer, then closes the
// subscription; a refusal goes into refused. A SSUBSCRIBE the server does
// not know (a Cluster before Redis 7.0) is no refusal: the Hub then
// subscribes with SUBSCRIBE.
func probeSubscribe(ctx context.Context, sub subscriber, command, channel string, refused map[string]string) error {
	ps := sub(ctx, channel)
	defer func() { _ = ps.Close() }()
	_, err := ps.Receive(ctx)
	if err == nil {
		return nil
	}
	if _, ok := errs.Refusal(err); !ok {
		return err
	}
	if command != "ssubscribe" || !strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		refused[command] = err.Error()
	}
	return nil
}

// clusterCheckName returns the name whose key and channel are in a slot that the
// primary at addr serves, or "" when none is found.
func (s *Session) clusterCheckName(ctx context.Context, c redirect.Shards, addr string) string {
	for i := 0; i < maxCheckNames; i++ {
		name := checkName + "-" + strconv.Itoa(i)
		m, err := c.MasterForKey(ctx, s.Key(name, KeyCheck))
		if err != nil {
			return ""
		}
		if m.Options().Addr == addr {
			return name
		}
	}
	return ""
}
