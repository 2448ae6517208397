package scripts

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

var probe = load("probe")

// Probe finds which of the commands that running the library's scripts
// takes the server that p sends to refuses: SCRIPT LOAD and EVALSHA, then,
// inside the probe script (probe.lua), TIME, publish (PUBLISH, or
// SPUBLISH on Cluster) on channel and XADD on key, a stream of the
// caller's own in channel's slot, which the script deletes. It returns the
// server's reply for each command refused, by the command's name as
// errs.Refusal gives it ("script|load", "time"). An error that is not a
// refusal (a connection lost, the ctx done) ends the probe: it returns
// what it found so far, and that error.
//
// A SPUBLISH the server does not know (a Cluster before Redis 7.0) is no
// refusal: the scripts then publish with PUBLISH, which the Hub's
// subscribers hear.
func Probe(ctx context.Context, p processor, key, publish, channel string) (map[string]string, error) {
	refused := map[string]string{}
	load := redis.NewStringCmd(ctx, "script", "load", probe.src)
	if err := p.Process(ctx, load); err != nil {
		if _, ok := errs.Refusal(err); !ok {
			return refused, err
		}
		refused["script|load"] = err.Error()
	}
	_, loadRefused := refused["script|load"]
	args := []any{1, key, publish, channel}
	cmd := redis.NewCmd(ctx, append([]any{"evalsha", probe.shaArg}, args...)...)
	_ = p.Process(ctx, cmd)
	if NoScript(cmd.Err()) && !loadRefused {
		// Lost since its load (a SCRIPT FLUSH, a failover): loaded again,
		// once, and no EVAL of its body.
		if err := p.Process(ctx, redis.NewStringCmd(ctx, "script", "load", probe.src)); err != nil {
			return refused, err
		}
		cmd = redis.NewCmd(ctx, append([]any{"evalsha", probe.shaArg}, args...)...)
		_ = p.Process(ctx, cmd)
	}
	if _, ok := errs.Refusal(cmd.Err()); ok || NoScript(cmd.Err()) && loadRefused {
		if ok {
			refused["evalsha"] = cmd.Err().Error()
		}
		// The commands inside are probed all the same.
		cmd = redis.NewCmd(ctx, append([]any{"eval", probe.src}, args...)...)
		_ = p.Process(ctx, cmd)
	}
	replies, err := cmd.StringSlice()
	if err != nil {
		if _, ok := errs.Refusal(err); ok {
			return refused, nil // no script runs: EVALSHA or SCRIPT LOAD says why
		}
		return refused, err
	}
	if len(replies) != 3 {
		return refused, fmt.Errorf("probe: unexpected reply %q", replies)
	}
	// A reply that is no refusal (OOM, WRONGTYPE: the server allows the
	// command) is none of the check's concern.
	for i, command := range []string{"time", strings.ToLower(publish), "xadd"} {
		switch reply := replies[i]; {
		case reply == "", command == "spublish" && strings.Contains(strings.ToLower(reply), "unknown"):
		default:
			if _, ok := errs.RefusalReply(reply); ok {
				refused[command] = reply
			}
		}
	}
	return refused, nil
}

// refusedInside returns the command that the server refused inside s, run
// on keys, for a refusal whose reply does not name it (errs.Refusal gives
// ""): TIME if the probe finds it refused and s calls it, else XADD if s
// calls it, else "". The probe costs a round trip, on this path only.
func (s *Script) refusedInside(ctx context.Context, rdb redis.Scripter, keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	calls := func(command string) bool { return strings.Contains(s.src, "redis.call('"+command+"'") }
	if calls("TIME") {
		replies, err := RunBySHA(ctx, rdb, probe.Script, keys[:1], "", "").StringSlice()
		if err == nil && len(replies) == 3 && replies[0] != "" {
			return "time"
		}
	}
	if calls("XADD") {
		return "xadd"
	}
	return ""
}

// refused returns the error of s's operation that a refusal made fail,
// naming the command (see errs.Refused); nil when err is no refusal.
func (s *Script) refused(ctx context.Context, rdb redis.Scripter, keys []string, err error) error {
	command, ok := errs.Refusal(err)
	if !ok {
		return nil
	}
	// A refusal of a key or a channel names none, and is no command's.
	if msg := strings.ToLower(err.Error()); command == "" &&
		(strings.Contains(msg, "can't run this command") || strings.Contains(msg, "unknown redis command")) {
		command = s.refusedInside(ctx, rdb, keys)
	}
	return errs.Refused(s.op(), command, err)
}
