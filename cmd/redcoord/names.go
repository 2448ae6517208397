package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/core"
)

// parts maps a key's part ("lock", "sem-leases") to the schema's Part, for
// the keys whose state the CLI reads: request markers (rel, done,
// latch-done, rate-done, drained) are the scripts' bookkeeping and
// channels are no keys.
var parts = func() map[string]core.Part {
	m := map[string]core.Part{}
	for p, k := range core.Schema() {
		if k.IsChannel() || k.Client || k.Tail != "" || marker[core.Part(p)] {
			continue
		}
		m[k.Part] = core.Part(p)
	}
	return m
}()

// marker is the parts that keep request markers.
var marker = map[core.Part]bool{core.KeyDone: true, core.KeyLatchDone: true, core.KeyRateDone: true}

// splitKey returns the name and the part of key, a key "<prefix>:{<name>}:<part>";
// ok is false for any other key, and for a key whose state is not read.
func splitKey(prefix, key string) (name string, p core.Part, ok bool) {
	rest, found := strings.CutPrefix(key, prefix+":{")
	if !found {
		return "", 0, false
	}
	name, part, found := strings.Cut(rest, "}:")
	if !found || name == "" {
		return "", 0, false
	}
	p, ok = parts[part]
	return name, p, ok
}

// matchPattern returns the SCAN pattern of the keys of the names that match
// the glob pattern: "<prefix>:{<pattern>}:*", with the prefix's glob
// characters escaped.
func matchPattern(prefix, pattern string) string {
	return escapeGlob(prefix) + ":{" + pattern + "}:*"
}

// escapeGlob escapes the characters that Redis's glob-style patterns
// treat as special.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// found is what SCAN found of one name: the parts that exist.
type found struct {
	name  string
	parts map[core.Part]bool
}

// scanNames returns the names with a key on node matching pattern, each
// with the parts it has, in the order SCAN first met them. Each SCAN
// call looks at count keys; the loop ends when the cursor comes back to
// 0, or at ctx's end.
func scanNames(ctx context.Context, node *redis.Client, prefix, pattern string, count int) ([]*found, error) {
	byName := map[string]*found{}
	var out []*found
	match := matchPattern(prefix, pattern)
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, match, int64(count)).Result()
		if err != nil {
			return nil, fmt.Errorf("SCAN on %s: %w", node.Options().Addr, explain(err))
		}
		for _, k := range keys {
			name, p, ok := splitKey(prefix, k)
			if !ok {
				continue
			}
			f := byName[name]
			if f == nil {
				f = &found{name: name, parts: map[core.Part]bool{}}
				byName[name] = f
				out = append(out, f)
			}
			f.parts[p] = true
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}
