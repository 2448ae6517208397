package rlock

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/redcoord/redcoord/internal/errs"
)

// compound is what a handle over several Mutexes is made of (MultiMutex,
// RedLock): its calls take turns, it counts its own re-entries, and the
// Lost of its latest hold follows its parts' holds.
type compound struct {
	turn chan struct{} // one call at a time, from its start to its reply

	mu    sync.Mutex
	count int           // hold count: re-entries are counted here
	lost  chan struct{} // the latest hold's (see Lost)
	stop  chan struct{} // closed when the latest hold is released
}

func newCompound() compound {
	return compound{turn: make(chan struct{}, 1), lost: make(chan struct{})}
}

// start begins an acquire: it checks with check, waits for the handle's
// turn and reports whether the handle holds already, having counted the
// re-entry. Unless err is set, the caller calls give when done.
func (c *compound) start(ctx context.Context, check func(context.Context) error, invalid error) (reentered bool, err error) {
	if err := check(ctx); err != nil {
		if invalid == nil { // a closed Client, a done ctx: say what did not happen too
			err = fmt.Errorf("%w: %w", errs.ErrNotAcquired, err)
		}
		return false, err
	}
	if err := c.take(ctx); err != nil {
		return false, fmt.Errorf("%w: %w", errs.ErrNotAcquired, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count > 0 {
		c.count++
		return true, nil
	}
	return false, nil
}

// held records a fresh hold by parts: its Lost closes once fewer than need
// of them still hold (a part's hold lost; with closedIsLost, also its
// Client closed, which no longer renews it). One goroutine per hold
// watches them; it ends then, at the hold's release, or when every part's
// Client has closed.
func (c *compound) held(parts []*Mutex, need int, closedIsLost bool) {
	lost, stop := make(chan struct{}), make(chan struct{})
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(stop)}}
	for _, m := range parts {
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.Lost())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.h.S.Wait(0).Done)})
	}
	c.mu.Lock()
	c.count, c.lost, c.stop = 1, lost, stop
	c.mu.Unlock()
	go func() {
		alive, open := len(parts), len(parts)
		quiet := reflect.ValueOf((<-chan struct{})(nil))
		for {
			i, _, _ := reflect.Select(cases)
			if i == 0 {
				return
			}
			k := (i - 1) / 2 // the part's two cases go quiet
			closed := (i-1)%2 == 1
			cases[1+2*k].Chan, cases[2+2*k].Chan = quiet, quiet
			if !closed || closedIsLost {
				if alive--; alive < need {
					close(lost)
					return
				}
			}
			if closed {
				if open--; open == 0 {
					return
				}
			}
		}
	}()
}

// release begins an Unlock: it reports notHeld for a handle that holds
// nothing (at once, not after an acquire under way), counts a re-entry's
// release, and for the last hold ends it, returning its Lost channel, with
// the handle's turn, which the caller gives back when done (last is true).
func (c *compound) release(ctx context.Context, notHeld error) (last bool, lost <-chan struct{}, err error) {
	c.mu.Lock()
	count := c.count
	c.mu.Unlock()
	if count == 0 {
		return false, nil, notHeld
	}
	if err := c.take(ctx); err != nil {
		return false, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.count {
	case 0:
		c.give()
		return false, nil, notHeld
	case 1:
		c.count = 0
		close(c.stop)
		return true, c.lost, nil
	}
	c.count--
	c.give()
	return false, nil, nil
}

// holding reports whether the handle holds.
func (c *compound) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count > 0
}

// Lost returns the latest hold's channel (see held).
func (c *compound) Lost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// checkAll returns the first reason an operation of a handle over ms must
// not start: err (a bad argument to its constructor), a closed Client, or
// a done ctx.
func checkAll(ctx context.Context, err error, ms []*Mutex) error {
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := m.h.S.Check(ctx); err != nil {
			return err
		}
	}
	return nil
}

// take waits for the handle's turn, bounded by ctx.
func (c *compound) take(ctx context.Context) error {
	select {
	case c.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another call on this handle: %w", ctx.Err())
	}
}

func (c *compound) give() { <-c.turn }
