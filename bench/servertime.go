package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// cmdStat is one line of INFO commandstats: how often a command ran and for
// how many µs in all.
type cmdStat struct{ calls, usec int64 }

// commandStats is INFO commandstats, summed over a deployment's masters, by
// the command's name as Redis gives it ("evalsha", "client|setinfo").
type commandStats map[string]cmdStat

// readCommandStats reads INFO commandstats from rdb's server, or from every
// master of a cluster.
func readCommandStats(ctx context.Context, rdb redis.UniversalClient) (commandStats, error) {
	stats := commandStats{}
	read := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		stats.add(info)
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex // the masters are read concurrently
		return stats, c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return read(ctx, c)
		})
	case *redis.Client:
		return stats, read(ctx, c)
	}
	return nil, fmt.Errorf("INFO commandstats: unsupported client %T", rdb)
}

// add adds the cmdstat_ lines of an INFO reply to s.
func (s commandStats) add(info string) {
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		st := s[name]
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "calls":
				st.calls += n
			case "usec":
				st.usec += n
			}
		}
		s[name] = st
	}
}

// noScript returns the commands a script may not call, by the names
// COMMAND gives them (the flag "noscript"): SUBSCRIBE, EVALSHA, HELLO...
func noScript(ctx context.Context, rdb redis.UniversalClient) (map[string]bool, error) {
	all, err := rdb.Command(ctx).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for name, c := range all {
		for _, f := range c.Flags {
			if f == "noscript" {
				out[strings.ToLower(name)] = true
			}
		}
	}
	return out, nil
}

// clientMicros returns the µs the server spent, from before to after, on the
// commands its clients sent it. That is less than the sum of every
// command's usec: a command a script calls is counted in commandstats under
// its own name too, though its time is already in the EVALSHA's. So a
// command a script may call counts only for as many of its calls as sent
// says the clients made (the rest ran inside scripts), at its mean time per
// call; a command no hook counted (the harness's own INFO) counts not at
// all. One a script may not call (noscript; by its container for
// "client|setinfo") counts in full, whether hooks saw it or not: EVALSHA,
// and SUBSCRIBE and the connection handshake, which bypass hooks.
func clientMicros(before, after commandStats, noscript map[string]bool, sent func(name string) int64) int64 {
	var usec int64
	for name, a := range after {
		b := before[name]
		calls, us := a.calls-b.calls, a.usec-b.usec
		if calls <= 0 {
			continue
		}
		container, _, _ := strings.Cut(name, "|")
		if noscript[container] {
			usec += us
			continue
		}
		if top := min(sent(container), calls); top > 0 {
			usec += us * top / calls
		}
	}
	return usec
}
