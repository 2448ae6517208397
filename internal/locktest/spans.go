package locktest

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Span is the round trip of the last script an operation sent, in ns since
// a history's start: what a linearizability check times the operation by.
type Span struct {
	mu        sync.Mutex
	call, ret int64
}

// Get returns when the last script was sent and when its reply came.
func (s *Span) Get() (call, ret int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.call, s.ret
}

// spanKey is the context key of an operation's Span.
type spanKey struct{}

// WithSpan returns ctx carrying s: the scripts sent with it are timed into s.
func WithSpan(ctx context.Context, s *Span) context.Context {
	return context.WithValue(ctx, spanKey{}, s)
}

// Spans is a go-redis hook that times every script (EVAL, EVALSHA) sent
// with a Span in its context (WithSpan), go-redis's retries included. The
// tries of a blocking acquire are sent with its context; the watchdog's
// renewals are not.
type Spans struct{ Start time.Time }

func (Spans) DialHook(next redis.DialHook) redis.DialHook { return next }

func (Spans) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h Spans) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		sp, _ := ctx.Value(spanKey{}).(*Span)
		if sp == nil || !strings.HasPrefix(cmd.Name(), "eval") {
			return next(ctx, cmd)
		}
		call := time.Since(h.Start).Nanoseconds()
		err := next(ctx, cmd)
		ret := time.Since(h.Start).Nanoseconds()
		sp.mu.Lock()
		sp.call, sp.ret = call, ret
		sp.mu.Unlock()
		return err
	}
}
