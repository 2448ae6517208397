package rrwlock

import (
	"context"

	"github.com/redcoord/redcoord"
)

var (
	_ redcoord.Locker = (*RWMutex)(nil)
	_ redcoord.Locker = rlocker{}
)

// RLocker returns the read side of the handle as a redcoord.Locker, as
// sync.RWMutex's RLocker does: its Lock and Unlock are RLock and RUnlock,
// its TryLock, Lost and Context are TryRLock, RLost and RContext.
func (m *RWMutex) RLocker() redcoord.Locker { return rlocker{m} }

type rlocker struct{ m *RWMutex }

func (r rlocker) Lock(ctx context.Context) error            { return r.m.RLock(ctx) }
func (r rlocker) TryLock(ctx context.Context) (bool, error) { return r.m.TryRLock(ctx) }
func (r rlocker) Unlock(ctx context.Context) error          { return r.m.RUnlock(ctx) }
func (r rlocker) Lost() <-chan struct{}                     { return r.m.RLost() }
func (r rlocker) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return r.m.RContext(parent)
}
