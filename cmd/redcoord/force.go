package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
)

// confirmWait bounds how long force-unlock waits for an answer.
const confirmWait = 5 * time.Minute

// forcers is how each lock kind is forced: by the library's own
// ForceUnlock, which tells the holder's Client on its channel and wakes or
// hands the lock to the waiters.
var forcers = map[string]func(ctx context.Context, c *redcoord.Client, name string) (bool, error){
	core.Rlock: func(ctx context.Context, c *redcoord.Client, n string) (bool, error) {
		return rlock.New(c, n).ForceUnlock(ctx)
	},
	core.Rfairlock: func(ctx context.Context, c *redcoord.Client, n string) (bool, error) {
		return rfairlock.New(c, n).ForceUnlock(ctx)
	},
	core.Rrwlock: func(ctx context.Context, c *redcoord.Client, n string) (bool, error) {
		return rrwlock.New(c, n).ForceUnlock(ctx)
	},
}

// forceUnlock ends the hold of the lock args[0], after asking on stdin
// unless -y.
func forceUnlock(ctx context.Context, e *env, args []string) error {
	name := args[0]
	rctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	st, err := readOne(rctx, e, name)
	cancel()
	if err != nil {
		return err
	}
	kind := ""
	for _, k := range st.Kinds {
		if forcers[k] != nil {
			kind = k
		}
	}
	if kind == "" && len(st.Kinds) == 0 {
		return fmt.Errorf("%w: %q is not held (it has only its fencing-token counter)", errNotFound, name)
	}
	if kind == "" {
		return fmt.Errorf("%q is a %s: only a lock (rlock, rfairlock, rrwlock) can be forced "+
			"(an election's leader resigns, or its lease runs out; a permit's lease runs out)", name, st.Kind())
	}
	if len(st.Holders) == 0 {
		return fmt.Errorf("%w: %s %q is not held", errNotFound, kind, name)
	}
	if !e.cfg.yes {
		fmt.Fprintf(e.stderr, "%s %q is held by:\n", kind, name)
		for _, h := range st.Holders {
			fmt.Fprintf(e.stderr, "  %s %s\n", h.Role, holderLine(h, st.ServerTime))
		}
		fmt.Fprintf(e.stderr, "Force-unlock it? Its holders lose it at once. [y/N] ")
		yes, err := confirm(ctx, e.stdin)
		if err != nil {
			return err
		}
		if !yes {
			return fmt.Errorf("%w: not confirmed, nothing forced", errNotFound)
		}
	}
	forced, err := force(ctx, e, kind, name)
	if err != nil {
		return err
	}
	if !forced {
		return fmt.Errorf("%w: %s %q was free by the time of the force", errNotFound, kind, name)
	}
	if e.cfg.json {
		return writeJSON(e.stdout, struct {
			Name   string   `json:"name"`
			Kind   string   `json:"kind"`
			Forced bool     `json:"forced"`
			Was    []Holder `json:"was_held_by"`
		}{name, kind, true, st.Holders})
	}
	fmt.Fprintf(e.stdout, "forced %s %q; its holders' Clients are told on their channels\n", kind, name)
	return nil
}

// force runs kind's ForceUnlock on name with a Client of its own, within
// -timeout.
func force(ctx context.Context, e *env, kind, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := redcoord.New(e.conn.rdb, redcoord.WithPrefix(e.cfg.prefix), redcoord.WithLogger(log))
	if err != nil {
		return false, err
	}
	defer func() { _ = c.Close(ctx) }()
	forced, err := forcers[kind](ctx, c, name)
	if err != nil {
		return false, explain(err)
	}
	return forced, nil
}

// confirm reads one line from in and reports whether it says yes. It
// gives up at ctx's end (SIGINT) or after confirmWait.
func confirm(ctx context.Context, in io.Reader) (bool, error) {
	line := make(chan string, 1)
	go func() { // ends when in gives a line or ends; a terminal's read outlives an interrupt only until exit
		s, _ := bufio.NewReader(in).ReadString('\n')
		line <- s
	}()
	t := time.NewTimer(confirmWait)
	defer t.Stop()
	select {
	case s := <-line:
		s = strings.ToLower(strings.TrimSpace(s))
		return s == "y" || s == "yes", nil
	case <-ctx.Done():
		return false, fmt.Errorf("%w: interrupted, nothing forced", errNotFound)
	case <-t.C:
		return false, fmt.Errorf("%w: no answer within %v, nothing forced", errNotFound, confirmWait)
	}
}
