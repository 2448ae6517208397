package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// readBatch is how many names one pipeline reads.
const readBatch = 500

// ls lists every name in use whose name matches the glob pattern args[0]
// (all names if none), one line each, sorted by name.
func ls(ctx context.Context, e *env, args []string) error {
	pattern := "*"
	if len(args) == 1 {
		pattern = args[0]
	}
	if pattern == "" || strings.ContainsAny(pattern, "{}") {
		return usagef("PATTERN: %q must be non-empty and contain no brace (names contain none)", pattern)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	states, err := listStates(ctx, e, pattern)
	if err != nil {
		return err
	}
	if e.cfg.json {
		err = writeJSON(e.stdout, struct {
			Names []*State `json:"names"`
		}{states})
	} else {
		err = printList(e.stdout, states)
	}
	if err != nil {
		return err
	}
	var bad []string
	for _, st := range states {
		bad = append(bad, st.Errors...)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d keys could not be read (each is listed above); the first: %s", len(bad), bad[0])
	}
	if len(states) == 0 {
		return fmt.Errorf("%w: no name in use matches %q under prefix %q", errNotFound, pattern, e.cfg.prefix)
	}
	return nil
}

// listStates scans every primary for the names matching pattern and reads
// the state of those in use (and of those whose keys could not be read).
func listStates(ctx context.Context, e *env, pattern string) ([]*State, error) {
	r := &reader{prefix: e.cfg.prefix, limit: e.cfg.limit}
	states := []*State{}
	err := e.conn.eachPrimary(ctx, func(ctx context.Context, node *redis.Client) error {
		fs, err := scanNames(ctx, node, e.cfg.prefix, pattern, e.cfg.count)
		if err != nil {
			return err
		}
		for i := 0; i < len(fs); i += readBatch {
			sts, err := r.readStates(ctx, node, fs[i:min(i+readBatch, len(fs))])
			if err != nil {
				return fmt.Errorf("on %s: %w", node.Options().Addr, err)
			}
			for _, st := range sts {
				if st.InUse() || len(st.Errors) > 0 {
					states = append(states, st)
				}
			}
		}
		return nil
	})
	sort.Slice(states, func(i, j int) bool { return states[i].Name < states[j].Name })
	return states, err
}

// printList writes the table of ls.
func printList(w io.Writer, states []*State) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tHOLDER\tLEASE\tTOKEN\tWAITING")
	for _, st := range states {
		lease := "-"
		if ms, ok := st.Soonest(); ok {
			lease = fmtMS(ms)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", st.Name, st.Kind(), holderSummary(st), lease, fmtToken(st.Token),
			st.Waiting)
		for _, msg := range st.Errors {
			fmt.Fprintf(tw, "  error: %s\t\t\t\t\t\n", msg)
		}
	}
	return tw.Flush()
}

// holderSummary returns who holds st, in a few words.
func holderSummary(st *State) string {
	var s string
	switch n := len(st.Holders); {
	case n == 0 && st.Permits == nil:
		return "-"
	case n == 1:
		s = shortHolder(st.Holders[0])
	case n > 1:
		s = fmt.Sprintf("%d %ss", n, st.Holders[0].Role)
	}
	if p := st.Permits; p != nil {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%d/%d permits free", p.Available, p.Total)
	}
	return s
}

// shortHolder returns h's role, its owner id with the client id cut to 8
// characters, and its host and pid if stored.
func shortHolder(h Holder) string {
	s := h.Role + " " + shortID(h.Owner)
	if h.Host != "" {
		s += fmt.Sprintf(" (%s pid %d)", h.Host, h.PID)
	}
	return s
}

// shortID cuts the 32-character client id at the start of an owner or
// request id to its first 8 characters.
func shortID(id string) string {
	c, rest, ok := strings.Cut(id, ":")
	if !ok || len(c) <= 8 {
		return id
	}
	return c[:8] + ":" + rest
}

// fmtMS formats ms milliseconds: 1.2s, 350ms, 5m0s.
func fmtMS(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Second || d <= -time.Second {
		d = d.Round(100 * time.Millisecond)
	}
	return d.String()
}

func fmtToken(t uint64) string {
	if t == 0 {
		return "-"
	}
	return strconv.FormatUint(t, 10)
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
