package hold

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
)

// Base is what every handle is made of, locks and semaphores alike: the
// Session, the name, the error New recorded, and a fresh owner's request
// sequence. A Base must not be copied.
type Base struct {
	S     *core.Session // nil when New was given a nil Client
	Name  string
	Err   error  // from New: a bad argument, reported by every method
	Owner string // "" when Err is set

	req atomic.Uint64 // request sequence: request ids are "<owner>:<seq>"
}

// Init does what New does for every primitive: it checks c and name, and
// names a fresh owner. It does no I/O. A bad argument is recorded in Err,
// and Init reports whether there was none.
func (b *Base) Init(c *redcoord.Client, name string) bool {
	b.Name = name
	if c == nil {
		b.Err = errs.Invalid("c", "nil *redcoord.Client")
		return false
	}
	b.S = core.Of(c)
	if b.Err = core.CheckName(name); b.Err != nil {
		return false
	}
	b.Owner = b.S.NewOwner()
	return true
}

// Key returns the key or channel p of the primitive (see core.Part).
func (b *Base) Key(p core.Part) string { return b.S.Key(b.Name, p) }

// Check returns the first reason an operation must not start: a bad
// argument to New, a closed Client, or a done ctx.
func (b *Base) Check(ctx context.Context) error {
	if b.Err != nil {
		return b.Err
	}
	return b.S.Check(ctx)
}

// CheckRelease is Check for a release, which a done ctx does not stop: a
// bad argument to New, or a closed Client.
func (b *Base) CheckRelease() error {
	if b.Err != nil {
		return b.Err
	}
	return b.S.Err()
}

// CheckAcquire is Check for an acquire: a closed Client or a done ctx also
// matches ErrNotAcquired, which says what did not happen beside why.
func (b *Base) CheckAcquire(ctx context.Context) error {
	err := b.Check(ctx)
	if err != nil && b.Err == nil {
		err = errs.Both(errs.ErrNotAcquired, err)
	}
	return err
}

// NextRequest returns a fresh request id, "<owner>:<seq>", for idempotent
// retries.
func (b *Base) NextRequest() string {
	var buf [96]byte
	id := append(append(buf[:0], b.Owner...), ':')
	return string(strconv.AppendUint(id, b.req.Add(1), 10))
}

// Renumber returns req, an id NextRequest made for an acquire that has sent
// nothing yet, or a fresh id if NextRequest made another since. A re-entry
// calls it in the turn it sends its first try in: the requests that change
// a hold are then numbered in the order they reach it, which the release
// scripts rely on to tell a late copy of an earlier release, numbered
// below the hold's last request, from a live one (see release_hold in
// scripts/lib.lua). A re-entry numbered before a release of the hold that
// took the turn first would otherwise be numbered below it.
func (b *Base) Renumber(req string) string {
	i := strings.LastIndexByte(req, ':')
	if seq, err := strconv.ParseUint(req[i+1:], 10, 64); err == nil && seq == b.req.Load() {
		return req
	}
	return b.NextRequest()
}

// TTL is the Client's lease TTL: the lease of a hold the watchdog renews,
// and how long a waiter's registration lives without a heartbeat.
func (b *Base) TTL() time.Duration { return b.S.Config.TTL }
