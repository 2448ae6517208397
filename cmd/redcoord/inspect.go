package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// inspect prints the whole state of the name args[0].
func inspect(ctx context.Context, e *env, args []string) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	st, err := readOne(ctx, e, args[0])
	if err != nil {
		return err
	}
	if e.cfg.json {
		err = writeJSON(e.stdout, st)
	} else {
		err = printState(e.stdout, st)
	}
	if err == nil && len(st.Errors) > 0 {
		err = errors.New(strings.Join(st.Errors, "; "))
	}
	return err
}

// readOne reads every key of name; a name with none is errNotFound.
func readOne(ctx context.Context, e *env, name string) (*State, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	node, err := e.conn.primaryFor(ctx, e.cfg.prefix+":{"+name+"}:lock")
	if err != nil {
		return nil, err
	}
	r := &reader{prefix: e.cfg.prefix, limit: e.cfg.limit, log: true}
	sts, err := r.readStates(ctx, node, []*found{{name: name, parts: allParts()}})
	if err != nil {
		return nil, err
	}
	st := sts[0]
	if !st.InUse() && st.Token == 0 && len(st.Terms) == 0 && len(st.Errors) == 0 {
		return st, fmt.Errorf("%w: no name %q under prefix %q (no key %s:{%s}:*)", errNotFound, name,
			e.cfg.prefix, e.cfg.prefix, name)
	}
	return st, nil
}

// printState writes st as inspect prints it.
func printState(w io.Writer, st *State) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	now := st.ServerTime
	fmt.Fprintf(tw, "name:\t%s\n", st.Name)
	fmt.Fprintf(tw, "kind:\t%s\n", st.Kind())
	fmt.Fprintf(tw, "server time:\t%s\n", now.Format(time.RFC3339Nano))
	fmt.Fprintf(tw, "last token:\t%s\n", fmtToken(st.Token))
	if len(st.Holders) == 0 {
		fmt.Fprintf(tw, "held:\tno\n")
	}
	for _, h := range st.Holders {
		fmt.Fprintf(tw, "%s:\t%s\n", h.Role, holderLine(h, now))
	}
	if p := st.Permits; p != nil {
		fmt.Fprintf(tw, "permits:\t%d of %d free\n", p.Available, p.Total)
	}
	if l := st.Latch; l != nil {
		fmt.Fprintf(tw, "latch:\tcount %d, round %d\n", l.Count, l.Round)
	}
	if r := st.Rate; r != nil {
		how := "the callers' limit"
		if r.Set {
			how = "stored by SetLimit"
		}
		fmt.Fprintf(tw, "rate:\t%d per %s, burst %d (%s), next slot %s ahead\n", r.Events, fmtMS(r.PeriodMS), r.Burst,
			how, fmtMS(r.AheadMS))
	}
	if len(st.Queue) > 0 {
		fmt.Fprintf(tw, "queue:\t%d, oldest first\n", len(st.Queue))
		for i, q := range st.Queue {
			fmt.Fprintf(tw, "  %d. %s\n", i+1, waiterLine(q))
		}
	}
	if len(st.WaitingWriters) > 0 {
		fmt.Fprintf(tw, "waiting writers:\t%d\n", len(st.WaitingWriters))
		for _, q := range st.WaitingWriters {
			fmt.Fprintf(tw, "  - %s\n", waiterLine(q))
		}
	}
	if len(st.Registrations) > 0 {
		fmt.Fprintf(tw, "registered Clients:\t%d (their waiters queue in their own process)\n", len(st.Registrations))
		for _, r := range st.Registrations {
			extra := ""
			if r.Smallest > 0 {
				extra = fmt.Sprintf(", smallest request %d", r.Smallest)
			}
			fmt.Fprintf(tw, "  - %s: client %s, heartbeat %s%s\n", r.Key, r.Client, heartbeat(r.HeartbeatMS), extra)
		}
	}
	for _, t := range st.Terms {
		fmt.Fprintf(tw, "term %d:\t%q since %s\n", t.Term, t.Value, t.Since.Format(time.RFC3339Nano))
	}
	if st.Truncated {
		fmt.Fprintf(tw, "truncated:\tlists cut at -limit members\n")
	}
	for _, msg := range st.Errors {
		fmt.Fprintf(tw, "error:\t%s\n", msg)
	}
	return tw.Flush()
}

// holderLine describes one hold on one line.
func holderLine(h Holder, now time.Time) string {
	var b strings.Builder
	b.WriteString(h.Owner + where(h.Host, h.PID))
	if h.Count > 0 {
		fmt.Fprintf(&b, ", count %d", h.Count)
	}
	if h.Token > 0 {
		fmt.Fprintf(&b, ", token %d", h.Token)
	}
	if h.AcquiredAt != nil {
		fmt.Fprintf(&b, ", held for %s", fmtMS(now.Sub(*h.AcquiredAt).Milliseconds()))
	}
	lease := "renewed by the watchdog"
	if h.Fixed {
		lease = "fixed"
	}
	if h.LeaseMS > 0 {
		lease = fmtMS(h.LeaseMS) + " " + lease
	}
	fmt.Fprintf(&b, ", lease %s, %s left", lease, fmtMS(h.RemainingMS))
	if h.Value != "" {
		fmt.Fprintf(&b, ", value %q", h.Value)
	}
	return b.String()
}

// waiterLine describes one waiter on one line.
func waiterLine(q Waiter) string {
	var b strings.Builder
	if q.Request != "" {
		b.WriteString("request " + q.Request + where(q.Host, q.PID))
	} else {
		b.WriteString(q.Owner + where(q.Host, q.PID))
	}
	if q.Permits > 0 {
		fmt.Fprintf(&b, ", asks %d permits", q.Permits)
	}
	if q.LeaseMS > 0 {
		fmt.Fprintf(&b, ", lease %s", fmtMS(q.LeaseMS))
	}
	if q.AgeMS != nil {
		fmt.Fprintf(&b, ", waiting %s", fmtMS(*q.AgeMS))
	} else if q.SeenMS > 0 {
		fmt.Fprintf(&b, ", seen waiting for %s", fmtMS(q.SeenMS))
	}
	fmt.Fprintf(&b, ", heartbeat %s", heartbeat(q.HeartbeatMS))
	return b.String()
}

// where returns " on <host> pid <pid>", or "" when the host is not known.
func where(host string, pid int) string {
	if host == "" {
		return ""
	}
	return fmt.Sprintf(" on %s pid %d", host, pid)
}

// heartbeat describes a heartbeat deadline ms away.
func heartbeat(ms int64) string {
	if ms <= 0 {
		return fmt.Sprintf("missed %s ago (dead: the next script drops it)", fmtMS(-ms))
	}
	return "due within " + fmtMS(ms)
}
