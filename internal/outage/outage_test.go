package outage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// replyErr returns the error go-redis gives for a server that answers
// every command with the error reply line (without its "-").
func replyErr(t *testing.T, line string) error {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := server.Read(buf); err != nil {
						return
					}
					if _, err := server.Write([]byte("-" + line + "\r\n")); err != nil {
						return
					}
				}
			}()
			return client, nil
		},
	})
	defer rdb.Close()
	err := rdb.EvalSha(context.Background(), "0123", []string{"k"}).Err()
	require.Error(t, err)
	return &errs.Error{Op: "script lock_acquire", Cause: err} // as the scripts wrap it
}

func TestTransient(t *testing.T) {
	script := func(err error) error { return &errs.Error{Op: "script lock_acquire", Cause: err} }
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	transient := map[string]error{
		"connection refused":        script(refused),
		"dial timeout":              script(&net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}),
		"connection reset":          script(&net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}),
		"broken pipe":               script(&os.SyscallError{Syscall: "write", Err: syscall.EPIPE}),
		"EOF":                       script(io.EOF),
		"unexpected EOF":            script(io.ErrUnexpectedEOF),
		"read i/o timeout":          script(&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}),
		"pool timeout":              script(redis.ErrPoolTimeout),
		"LOADING":                   replyErr(t, "LOADING Redis is loading the dataset in memory"),
		"TRYAGAIN":                  replyErr(t, "TRYAGAIN Multiple keys request during rehashing of slot"),
		"CLUSTERDOWN":               replyErr(t, "CLUSTERDOWN The cluster is down"),
		"MASTERDOWN":                replyErr(t, "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."),
		"READONLY":                  replyErr(t, "READONLY You can't write against a read only replica."),
		"a real refused connection": dialClosed(t),
	}
	for name, err := range transient {
		assert.True(t, Transient(err), "%s: %v", name, err)
	}
	permanent := map[string]error{
		"nil":                         nil,
		"ctx cancelled":               context.Canceled,
		"ctx deadline":                script(context.DeadlineExceeded),
		"a wait that ended":           fmt.Errorf("%w: %w", errs.ErrNotAcquired, context.DeadlineExceeded),
		"Client closed":               errs.ErrClosed,
		"go-redis client closed":      script(redis.ErrClosed),
		"wrong type":                  fmt.Errorf("%w: a hash", errs.ErrWrongType),
		"bad argument":                errs.Invalid("n", "must be at least 1"),
		"not set":                     errs.ErrNotSet,
		"WAIT shortfall":              errs.ErrNotReplicated,
		"lost re-entry":               errs.LostAcquire("lock %q", "n"),
		"a wrong type among refusals": errors.Join(fmt.Errorf("%w: a hash", errs.ErrWrongType), script(refused)),
		"redis.Nil":                   redis.Nil,
		"unknown command":             replyErr(t, "ERR unknown command 'EVALSHA'"),
		"NOSCRIPT":                    replyErr(t, "NOSCRIPT No matching script. Please use EVAL."),
		"a script's error":            replyErr(t, "ERR user_script:1: Script attempted to access nonexistent global variable"),
		"OOM":                         replyErr(t, "OOM command not allowed when used memory > 'maxmemory'."),
		"NOPERM":                      replyErr(t, "NOPERM this user has no permissions to run the 'evalsha' command"),
	}
	for name, err := range permanent {
		assert.False(t, Transient(err), "%s: %v", name, err)
	}
}

// dialClosed returns the error go-redis gives for a port nobody listens on.
func dialClosed(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	err = rdb.Ping(context.Background()).Err()
	require.Error(t, err)
	return err
}

// Failed pauses for a back-off that doubles up to MaxPoll, reports every
// failure to the observer, logs the 1st, 2nd, 4th... and Ok ends the
// outage; a wait that ends meanwhile names the last failure.
func TestRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		var events []obs.Event
		r := Retry{Kind: "rlock", Name: "n", MaxPoll: 400 * time.Millisecond,
			Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
			Observe: func(e obs.Event) { events = append(events, e) }}
		failure := &errs.Error{Op: "script lock_acquire", Cause: io.EOF}
		ctx := context.Background()
		var pauses []time.Duration
		for range 6 {
			start := time.Now()
			require.NoError(t, r.Failed(ctx, failure))
			pauses = append(pauses, time.Since(start))
		}
		for i, cap := range []time.Duration{50, 100, 200, 400, 400, 400} {
			cap *= time.Millisecond
			assert.LessOrEqual(t, pauses[i], cap, "pause %d", i)
			assert.GreaterOrEqual(t, pauses[i], cap/2, "pause %d", i)
		}
		require.Len(t, events, 6)
		for i, e := range events {
			assert.Equal(t, obs.Retrying, e.Kind)
			assert.Equal(t, i+1, e.Count)
			assert.Equal(t, pauses[i], e.Wait)
			assert.Equal(t, failure, e.Err)
			assert.Equal(t, "rlock", e.Primitive)
		}
		assert.Equal(t, 3, strings.Count(logs.String(), "level=WARN"), "the 1st, 2nd and 4th failures:\n%s", logs.String())
		assert.True(t, r.Failing())

		dctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		err := r.Failed(dctx, failure)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, io.EOF, "the last failure is named, not matched")
		assert.Equal(t, "context deadline exceeded; Redis unreachable, 7 tries in a row failed, the last with: script lock_acquire: EOF", err.Error())

		r.Ok()
		assert.False(t, r.Failing())
		assert.Contains(t, logs.String(), "level=INFO")
		assert.Equal(t, context.Canceled, r.Ended(context.Canceled), "no failure to name")
		start := time.Now()
		require.NoError(t, r.Failed(ctx, failure))
		assert.LessOrEqual(t, time.Since(start), FirstBackoff, "the back-off starts again")

		done := make(chan struct{})
		close(done)
		r.Done = done
		assert.ErrorIs(t, r.Failed(ctx, failure), errs.ErrClosed)
	})
}
