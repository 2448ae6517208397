package hold

import (
	"context"
	"sync"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/errs"
)

// Gate keeps the goroutines that share a handle out of each other's
// holds, as a sync.Mutex would: a fresh acquire takes the handle's slot
// (Enter), the hold it takes claims it (Claim), and the hold's end gives it
// back (End); another acquire waits for it meanwhile, in this process,
// without a request to Redis. Go has no goroutine ids, so the caller that
// means to re-enter says so with its context: one that descends from the
// current hold's Context (Mark) re-enters without the slot. Its zero value
// is free; a Gate must not be copied.
type Gate struct {
	mu   sync.Mutex // guards the fields below
	slot slot       // full while an acquire, or the hold it took, keeps the handle
	seq  uint64     // numbers the acquires that take the slot
	by   uint64     // the acquire that keeps the slot until its hold keeps it; 0: none
	kept bool       // a hold keeps the slot
}

// Entry is one acquire's pass through a Gate: a value, so that an
// uncontended acquire allocates nothing for it.
type Entry struct {
	g *Gate
	n uint64 // the acquire's number, if it took the slot; 0: a re-entry
}

// Reentry reports whether the acquire re-enters the current hold.
func (e Entry) Reentry() bool { return e.n == 0 }

// markKey is the key under which a hold's contexts carry its mark.
type markKey struct{ g *Gate }

// Mark returns parent carrying mark, which names the current hold (any
// value unique to it), so that an acquire with it, or a context derived
// from it, re-enters that hold.
func (g *Gate) Mark(parent context.Context, mark any) context.Context {
	return context.WithValue(parent, markKey{g}, mark)
}

// Marked returns the mark ctx carries for g, nil when none.
func (g *Gate) Marked(ctx context.Context) any { return ctx.Value(markKey{g}) }

// Enter begins an acquire. held is the mark of the handle's current hold,
// nil when it holds nothing; an acquire whose ctx carries it re-enters that
// hold. Any other acquire takes the slot, waiting until the hold that
// keeps it ends, or, unless block, finding it kept: acquire.ErrBusy at once
// (TryLock's (false, nil)). A wait that ends matches ErrNotAcquired and
// ctx.Err(), and so does an acquire whose ctx carries the mark of a hold
// that has ended (its Context is cancelled by then). The caller calls
// Exit when the acquire ends.
func (g *Gate) Enter(ctx context.Context, held any, block bool) (Entry, error) {
	mark := g.Marked(ctx)
	if mark != nil && mark == held {
		return Entry{g: g}, nil
	}
	if block {
		if err := g.slot.take(ctx, &g.mu); err != nil {
			return Entry{}, errs.Both(errs.ErrNotAcquired, err)
		}
		g.mu.Lock()
	} else {
		g.mu.Lock()
		if !g.slot.tryTakeLocked() {
			g.mu.Unlock()
			return Entry{}, acquire.ErrBusy
		}
	}
	defer g.mu.Unlock()
	if err := ctx.Err(); err != nil {
		g.slot.giveLocked()
		return Entry{}, errs.Both(errs.ErrNotAcquired, err)
	}
	g.seq++
	g.by = g.seq
	return Entry{g: g, n: g.seq}, nil
}

// Exit ends the acquire of e: it gives the slot back unless the hold the
// acquire took keeps it.
func (e Entry) Exit() {
	if e.n == 0 {
		return
	}
	g := e.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.by == e.n {
		g.by = 0
		g.slot.giveLocked()
	}
}

// Claim records a fresh hold, which keeps the slot from now until End: the
// slot of the acquire that entered, if one keeps it and entered is set,
// otherwise a free one. It reports false when another acquire or hold keeps
// the slot: the hold must then be given back, as another goroutine's
// acquire is under way.
func (g *Gate) Claim(entered bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.kept {
		return false
	}
	if g.by != 0 {
		if !entered {
			return false
		}
		g.by, g.kept = 0, true
		return true
	}
	if !g.slot.tryTakeLocked() {
		return false
	}
	g.kept = true
	return true
}

// End records that the hold that keeps the slot ended (released to zero,
// lost, replaced, or ended by the Client's Close): the next acquire may
// take it.
func (g *Gate) End() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.kept {
		g.kept = false
		g.slot.giveLocked()
	}
}
