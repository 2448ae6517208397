package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

// start makes sure the connection is open: the first caller opens it, the
// others wait for that (bounded by ctx).
func (h *Hub) start(ctx context.Context) error {
	for {
		h.mu.Lock()
		switch {
		case h.closed:
			h.mu.Unlock()
			return errs.ErrClosed
		case h.refused != nil:
			h.mu.Unlock()
			return h.refused
		case h.ps != nil || h.sharded:
			h.mu.Unlock()
			return nil
		case h.starting != nil:
			wait := h.starting
			h.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-h.quit:
				return errs.ErrClosed
			case <-ctx.Done():
				return fmt.Errorf("pubsub: subscribe: %w", ctx.Err())
			}
		case time.Now().Before(h.retryAt):
			err := h.retryErr
			h.mu.Unlock()
			return err
		}
		h.starting = make(chan struct{})
		h.mu.Unlock()
		if h.cluster != nil {
			err := h.probeShard(ctx)
			if err == nil {
				return h.shardOpened()
			}
			if !isUnknownCommand(err) {
				return h.opened(ctx, nil, err)
			}
			// Detected once: the Hub stays on SUBSCRIBE for its life, and
			// the scripts' SPUBLISH falls back to PUBLISH on such a server.
			h.opts.logger.Info("pubsub: the cluster has no sharded pub/sub (Redis before 7.0); using SUBSCRIBE", "err", err)
			h.mu.Lock()
			h.commands++
			h.mu.Unlock()
		}
		ps, err := h.open(ctx)
		return h.opened(ctx, ps, err)
	}
}

// opened records the outcome of open and starts the reader on success.
func (h *Hub) opened(ctx context.Context, ps *redis.PubSub, err error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.starting)
	h.starting = nil
	h.commands++ // the probe's SUBSCRIBE, sent whatever the outcome
	switch {
	case h.closed:
		if ps != nil {
			_ = ps.Close()
		}
		return errs.ErrClosed
	case err == nil:
		h.ps = ps
		h.done = make(chan struct{})
		go h.read(ps.ChannelWithSubscriptions(redis.WithChannelSize(1000)), h.done)
		return nil
	case ctxDone(ctx):
		return fmt.Errorf("pubsub: subscribe: %w", ctxErr(ctx))
	case isRefusal(err):
		h.refused = errs.Both(errs.ErrSubscribeRefused, err)
		h.opts.logger.Log(ctx, h.opts.refusalLevel, "pubsub: server refused SUBSCRIBE; waits will poll", "err", err)
		return h.refused
	default:
		h.retryErr = &errs.Error{Sentinel: errs.ErrSubscribeRefused,
			Detail: fmt.Sprintf("no confirmation of SUBSCRIBE %q", h.opts.probe), Cause: err}
		h.retryAt = time.Now().Add(retryDelay)
		h.opts.logger.Warn("pubsub: could not open the subscription connection; waits will poll",
			"err", err, "retry_in", retryDelay)
		return h.retryErr
	}
}

// open subscribes to the probe channel and reads its confirmation
// synchronously, before any goroutine reads the connection, so that a refusal
// is seen as the error reply it is.
func (h *Hub) open(ctx context.Context) (*redis.PubSub, error) {
	ps := h.rdb.Subscribe(ctx, h.opts.probe)
	msg, err := ps.ReceiveTimeout(ctx, h.opts.confirmTimeout)
	if err == nil {
		if s, ok := msg.(*redis.Subscription); ok && s.Kind == "subscribe" && s.Channel == h.opts.probe {
			return ps, nil
		}
		err = fmt.Errorf("unexpected reply %v", msg)
	}
	_ = ps.Close()
	return nil, err
}

// ctxDone reports whether ctx has ended, or its deadline has passed: a read
// that timed out at the ctx deadline may return a moment before ctx.Err()
// is set.
func ctxDone(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// ctxErr is ctx.Err(), or DeadlineExceeded when the deadline has passed but
// ctx has not noticed yet.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

// isRefusal reports whether err is the server saying no (NOPERM, unknown
// command, a proxy's refusal) rather than a state that passes (loading,
// failover in progress).
func isRefusal(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	for _, transient := range []string{"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "MOVED", "ASK"} {
		if strings.HasPrefix(rerr.Error(), transient) {
			return false
		}
	}
	return true
}
