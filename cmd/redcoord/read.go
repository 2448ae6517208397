package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/core"
)

// A reader reads the state of names in one pipeline per batch: each name's
// existing keys, one or two read-only commands per key, and the server's
// TIME once per pipeline. Nothing it sends writes.
type reader struct {
	prefix string
	limit  int  // members read of a list or zset (one more tells that there are more)
	log    bool // read relection's log (inspect)
}

// read is one name's commands, by part.
type read struct {
	name string
	cmds map[core.Part][]redis.Cmder
}

// allParts is every part, for a name whose keys were not scanned.
func allParts() map[core.Part]bool {
	m := map[core.Part]bool{}
	for _, p := range parts {
		m[p] = true
	}
	return m
}

// readStates returns the state of each name in fs, read from node.
func (r *reader) readStates(ctx context.Context, node redis.Cmdable, fs []*found) ([]*State, error) {
	pipe := node.Pipeline()
	now := pipe.Time(ctx)
	reads := make([]read, len(fs))
	for i, f := range fs {
		reads[i] = r.queue(ctx, pipe, f)
	}
	_, _ = pipe.Exec(ctx) // each command's error is its own; a key of another type spoils only its name
	t, err := now.Result()
	if err != nil {
		return nil, fmt.Errorf("reading %d names: %w", len(fs), explain(err))
	}
	out := make([]*State, len(reads))
	for i, rd := range reads {
		out[i] = r.decode(rd, t)
	}
	return out, nil
}

// queue adds to pipe the reads of f's parts.
func (r *reader) queue(ctx context.Context, pipe redis.Pipeliner, f *found) read {
	rd := read{name: f.name, cmds: map[core.Part][]redis.Cmder{}}
	stop := int64(r.limit) // LRANGE and ZRANGE stop index: limit+1 members
	for p := range f.parts {
		key := r.prefix + ":{" + f.name + "}:" + core.Describe(p).Part
		var cs []redis.Cmder
		switch core.Describe(p).Type {
		case "hash":
			cs = append(cs, pipe.HGetAll(ctx, key))
			if p == core.KeyLock {
				cs = append(cs, pipe.PTTL(ctx, key))
			}
		case "zset":
			cs = append(cs, pipe.ZRangeWithScores(ctx, key, 0, stop))
		case "list":
			cs = append(cs, pipe.LRange(ctx, key, 0, stop))
		case "stream":
			if !r.log {
				continue
			}
			cs = append(cs, pipe.XRevRangeN(ctx, key, "+", "-", 5))
		}
		rd.cmds[p] = cs
	}
	return rd
}

// decoded is one name's replies, as decode's helpers use them.
type decoded struct {
	st     *State
	prefix string
	limit  int
	nowMS  int64
	rd     read
}

// decode turns rd's replies into the name's State.
func (r *reader) decode(rd read, now time.Time) *State {
	d := &decoded{st: &State{Name: rd.name, ServerTime: now, Holders: []Holder{}}, prefix: r.prefix,
		limit: r.limit, nowMS: now.UnixMilli(), rd: rd}
	d.lock()
	d.fairQueue(core.KeyQueue, core.KeyAlive, core.KeyWaiting, core.Rfairlock)
	d.fairQueue(core.KeyElectQueue, core.KeyElectAlive, core.KeyElectWaiting, core.Relection)
	d.registry(core.KeyWaiters, core.Rlock, true)
	d.readers()
	d.semaphore()
	d.others()
	return d.st
}

// key returns part p's key of the name, as errors name it.
func (d *decoded) key(p core.Part) string {
	return d.prefix + ":{" + d.rd.name + "}:" + core.Describe(p).Part
}

// ok reports whether part p was read without error; an error is recorded
// in the State, naming the key.
func (d *decoded) ok(p core.Part) bool {
	cs, read := d.rd.cmds[p]
	if !read {
		return false
	}
	for _, c := range cs {
		err := c.Err()
		if err == nil || err == redis.Nil {
			continue
		}
		if strings.HasPrefix(err.Error(), "WRONGTYPE") {
			d.st.Errors = append(d.st.Errors, fmt.Sprintf("%s holds another type of value than the %s redcoord keeps there",
				d.key(p), core.Describe(p).Type))
		} else {
			d.st.Errors = append(d.st.Errors, fmt.Sprintf("%s: %v", d.key(p), explain(err)))
		}
		return false
	}
	return true
}

// hash returns part p's hash; nil if absent or unreadable.
func (d *decoded) hash(p core.Part) map[string]string {
	if !d.ok(p) {
		return nil
	}
	m := d.rd.cmds[p][0].(*redis.MapStringStringCmd).Val()
	if len(m) == 0 {
		return nil
	}
	return m
}

// zset returns part p's members with their scores, in order.
func (d *decoded) zset(p core.Part) []redis.Z {
	if !d.ok(p) {
		return nil
	}
	return clip(d, d.rd.cmds[p][0].(*redis.ZSliceCmd).Val())
}

// list returns part p's elements, in order.
func (d *decoded) list(p core.Part) []string {
	if !d.ok(p) {
		return nil
	}
	return clip(d, d.rd.cmds[p][0].(*redis.StringSliceCmd).Val())
}

// pttl returns the remaining TTL of part p's key in ms (the second command
// read of it).
func (d *decoded) pttl(p core.Part) int64 {
	return d.rd.cmds[p][1].(*redis.DurationCmd).Val().Milliseconds()
}

// clip cuts what was read at the limit, marking the state truncated.
func clip[T any](d *decoded, s []T) []T {
	if len(s) > d.limit {
		d.st.Truncated = true
		return s[:d.limit]
	}
	return s
}

// fence raises the State's token to the fence hash p's last.
func (d *decoded) fence(p core.Part) {
	if h := d.hash(p); h != nil {
		d.st.Token = max(d.st.Token, parseUint(h["n"]))
		if p == core.KeyFence {
			d.st.fence = h["n"]
		}
	}
}

// remaining returns the ms from now to deadline ms.
func (d *decoded) remaining(deadline float64) int64 { return int64(deadline) - d.nowMS }
