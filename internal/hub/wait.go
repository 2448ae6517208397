package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/outage"
)

// Wait replaces a spin-wait on a condition kept in Redis. It subscribes to
// channel, then calls check; while check reports false it waits for a
// message on channel, the poll interval, or the end of ctx, and calls check
// again. Whoever makes the condition true should PUBLISH to channel (One,
// All, N or To) afterwards; a lost or missing message costs at most one poll
// interval.
//
// Wait returns nil once check reports true, check's error as it is, an
// error wrapping ctx.Err(), or ErrClosed if the Hub is closed. If the server
// refuses the subscription, Wait polls: it still works, only slower. A
// check that fails with an outage's error (outage.Transient: a connection
// refused, LOADING...) is called again after a pause that doubles up to the
// poll interval, until it is answered or ctx ends; the error then names the
// last failure.
func (h *Hub) Wait(ctx context.Context, channel string, check func(ctx context.Context) (bool, error)) error {
	if check == nil {
		return errs.Invalid("check", "must not be nil")
	}
	var wake <-chan struct{} // nil while polling: never ready
	sub, err := h.Subscribe(ctx, channel, "")
	switch {
	case err == nil:
		defer sub.Close()
		wake = sub.C()
	case errors.Is(err, errs.ErrSubscribeRefused):
		h.opts.logger.Debug("pubsub: wait polls", "channel", channel, "err", err)
	default:
		return err
	}

	r := outage.Retry{Kind: "pubsub", Name: channel, MaxPoll: h.opts.pollInterval, Done: h.quit,
		Logger: h.opts.logger, Observe: h.opts.observe}
	timer := time.NewTimer(h.opts.pollInterval)
	defer timer.Stop()
	for {
		ok, err := check(ctx)
		switch {
		case err == nil:
			r.Ok()
		case ctx.Err() != nil && r.Failing():
			return fmt.Errorf("pubsub: wait on %q: %w", channel, r.Ended(ctx.Err()))
		case ctx.Err() == nil && outage.Transient(err):
			if err := r.Failed(ctx, err); err != nil {
				return fmt.Errorf("pubsub: wait on %q: %w", channel, err)
			}
			continue
		default:
			return err
		}
		if ok {
			return nil
		}
		timer.Reset(h.opts.pollInterval)
		select {
		case <-wake:
		case <-timer.C:
		case <-h.quit:
			return errs.ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("pubsub: wait on %q: %w", channel, ctx.Err())
		}
	}
}
