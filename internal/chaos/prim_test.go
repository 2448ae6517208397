package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// A primitive is one thing the suite drives: it says what its handles can
// do and makes them. Each adapter file (prim_<name>_test.go) holds one.
type primitive interface {
	// caps says which operations the generator may draw.
	caps() caps
	// setup runs once per schedule before any handle acts (set permits).
	setup(ctx context.Context, w *world) error
	// handle makes handle i of process p; r draws its name set.
	handle(w *world, p, i int, r *rand.Rand) handle
}

// caps says what a primitive's handles can do.
type caps struct {
	servers   int  // miniredis servers (RedLock: 3 or 5)
	capacity  int  // write holds allowed at once on a name (1: exclusive)
	reentrant bool // a holding handle may acquire again
	lease     bool // fixed-lease acquires and Extend
	force     bool // ForceUnlock
	forget    bool // Forget
	read      bool // read holds beside write holds (rrwlock)
	proclaim  bool // Proclaim (relection)
	fenced    bool // holds carry tokens
	noClose   bool // Client.Close is not drawn (permits without a lease never return)
	context   bool // Context
}

// acq is one acquire call.
type acq struct {
	try   bool
	lease time.Duration // 0: renewed by the watchdog
	read  bool
}

// hold is what a handle has after an acquire returned true.
type hold struct {
	tokens  map[string]uint64 // by name; nil if not fenced
	lost    <-chan struct{}   // nil: the hold is never reported lost
	permits int               // the permits it takes of a name's capacity; 0: one
}

// handle is one owner: a lock handle, a candidate, a semaphore user.
// Methods that a primitive's caps rule out are never called.
type handle interface {
	names() []string
	acquire(ctx context.Context, a acq) (bool, error)
	// held returns the hold taken by the acquire that just returned true.
	held(read bool) hold
	release(ctx context.Context, read bool) error
	extend(ctx context.Context, lease time.Duration, read bool) error
	force(ctx context.Context) (bool, error)
	forget(ctx context.Context) error
	proclaim(ctx context.Context) error
	context(parent context.Context, read bool) (context.Context, context.CancelFunc)
}

// holdCounter is implemented by the handles of re-entrant primitives: holds
// reports whether the handle, by its own count, still holds (read or
// write), as the release of a re-entry left it.
type holdCounter interface {
	holds(read bool) bool
}

// errUnsupported is returned by adapter methods a primitive lacks.
var errUnsupported = errors.New("chaos: unsupported")

// unsupported gives an adapter the methods its caps rule out.
type unsupported struct{}

func (unsupported) extend(context.Context, time.Duration, bool) error { return errUnsupported }
func (unsupported) force(context.Context) (bool, error)               { return false, errUnsupported }
func (unsupported) forget(context.Context) error                      { return errUnsupported }
func (unsupported) proclaim(context.Context) error                    { return errUnsupported }
func (unsupported) context(p context.Context, _ bool) (context.Context, context.CancelFunc) {
	return context.WithCancel(p)
}

// primitives lists every primitive by its summary name, in summary order.
// RedLock runs on 5 servers for one seed in four, on 3 for the others; the
// Semaphore's handles are WithFair for one seed in three.
var primitives = []struct {
	name string
	make func(seed uint64) primitive
}{
	{"rlock", func(uint64) primitive { return rlockPrim{} }},
	{"rfairlock", func(uint64) primitive { return rfairlockPrim{} }},
	{"rrwlock", func(uint64) primitive { return rrwlockPrim{} }},
	{"multi", func(uint64) primitive { return multiPrim{} }},
	{"redlock", func(seed uint64) primitive { return redlockPrim{n: 3 + 2*int(min(seed%4, 1)^1)} }},
	{"relection", func(uint64) primitive { return relectionPrim{} }},
	{"xsemaphore", func(uint64) primitive { return xsemPrim{} }},
	{"semaphore", func(seed uint64) primitive { return semPrim{fair: seed%3 == 0} }},
}
