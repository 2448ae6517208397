package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/hold"
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
	if kind == "" && len(st.Errors) > 0 { // a key of another type, where a lock's would be
		return errors.New(strings.Join(st.Errors, "; "))
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
		// A read hold takes no fencing token, which the force checks: the
		// holds are read again, and forced only if they are the ones shown.
		now, err := stillHeld(ctx, e, kind, name)
		if err != nil {
			return err
		}
		if !slices.Equal(holds(now), holds(st)) {
			return fmt.Errorf("%w: %s %q is held by other holds than the ones shown (now %d); nothing forced, "+
				"run force-unlock again to see them", errNotFound, kind, name, len(holds(now)))
		}
	}
	forced, err := force(ctx, e, kind, name, st.fence)
	if err != nil {
		return err
	}
	if !forced {
		return notForced(ctx, e, kind, name)
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
// -timeout, on the holds there were when the fence's last token was read
// as fence ("": no fence): a hold taken since, after the state shown, is
// left alone (false).
func force(ctx context.Context, e *env, kind, name, fence string) (bool, error) {
	if fence == "" {
		fence = "0"
	}
	ctx, cancel := context.WithTimeout(hold.WithSeenFence(ctx, fence), e.cfg.timeout)
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

// notForced returns the error of a force that ended no hold: the name is
// free, or held by a hold taken after the state shown.
func notForced(ctx context.Context, e *env, kind, name string) error {
	if _, err := stillHeld(ctx, e, kind, name); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s %q is held by a hold taken after the one shown; nothing forced, "+
		"run force-unlock again to see it", errNotFound, kind, name)
}

// stillHeld reads the state of name again, within -timeout: an error
// matching errNotFound if the lock is no longer held.
func stillHeld(ctx context.Context, e *env, kind, name string) (*State, error) {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	st, err := readOne(rctx, e, name)
	if err == nil && len(holds(st)) == 0 || errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("%w: %s %q was free by the time of the force", errNotFound, kind, name)
	}
	return st, err
}

// holds returns the lock's holds in st (not the permits of a semaphore of
// the same name), each as its role, owner and token, sorted.
func holds(st *State) []string {
	var out []string
	for _, h := range st.Holders {
		if h.Role != "permit" {
			out = append(out, fmt.Sprintf("%s %s %d", h.Role, h.Owner, h.Token))
		}
	}
	slices.Sort(out)
	return out
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
