package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// A pipeline far larger than any reply the client reads before it has
// written every command completes: Bubble's connections buffer writes (with
// net.Pipe both sides stalled until the write timeout).
func TestBubblePipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m, opt := Bubble()
		defer m.Close()
		rdb := redis.NewClient(opt)
		defer rdb.Close()

		sha, err := rdb.ScriptLoad(ctx, "return redis.call('GET', KEYS[1]) .. ARGV[1]").Result()
		if err != nil {
			t.Fatalf("SCRIPT LOAD: %v", err)
		}
		const n = 500
		start := time.Now()
		pipe := rdb.Pipeline()
		sets := make([]*redis.StatusCmd, n)
		evals := make([]*redis.Cmd, n)
		for i := range n {
			sets[i] = pipe.Set(ctx, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), 0)
		}
		for i := range n {
			evals[i] = pipe.EvalSha(ctx, sha, []string{fmt.Sprintf("k%d", i)}, "!")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("Exec: %v", err)
		}
		for i := range n {
			if got, err := sets[i].Result(); err != nil || got != "OK" {
				t.Fatalf("SET %d = %q, %v; want OK", i, got, err)
			}
			want := fmt.Sprintf("v%d!", i)
			if got, err := evals[i].Text(); err != nil || got != want {
				t.Fatalf("EVALSHA %d = %q, %v; want %q", i, got, err, want)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the pipeline took %v of bubble time, want 0", d)
		}
	})
}

// A Write does not wait for a reader, whatever its size.
func TestMemConnWriteDoesNotBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := memConnPair("a", "b")
		defer a.Close()
		defer b.Close()
		want := bytes.Repeat([]byte("0123456789"), 1<<17)
		for range 3 {
			if n, err := a.Write(want); n != len(want) || err != nil {
				t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(want))
			}
		}
		got := make([]byte, 3*len(want))
		if _, err := io.ReadFull(b, got); err != nil {
			t.Fatalf("ReadFull: %v", err)
		}
		if !bytes.Equal(got, bytes.Repeat(want, 3)) {
			t.Fatal("bytes read differ from bytes written")
		}
		if a.LocalAddr().String() != "a" || a.RemoteAddr().String() != "b" {
			t.Errorf("addrs %v, %v; want a, b", a.LocalAddr(), a.RemoteAddr())
		}
	})
}

// isTimeout reports whether err is a deadline error as net.Conn defines it.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && errors.Is(err, os.ErrDeadlineExceeded)
}

// Read deadlines fire on the bubble's clock; moving one into the past wakes a
// pending Read at once, and the zero time clears it.
func TestMemConnReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := memConnPair("a", "b")
		defer a.Close()
		defer b.Close()
		buf := make([]byte, 8)

		start := time.Now()
		if err := b.SetReadDeadline(start.Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Read(buf); !isTimeout(err) {
			t.Fatalf("Read = %v, want a timeout", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("the deadline fired after %v, want exactly 5s", d)
		}
		if _, err := b.Read(buf); !isTimeout(err) {
			t.Fatalf("Read after the deadline = %v, want a timeout", err)
		}

		// A pending Read, then a deadline in the past.
		b.SetReadDeadline(time.Time{})
		errc := make(chan error)
		go func() {
			_, err := b.Read(buf)
			errc <- err
		}()
		time.Sleep(time.Hour) // no deadline: still blocked
		start = time.Now()
		b.SetReadDeadline(start.Add(-time.Second))
		if err := <-errc; !isTimeout(err) {
			t.Fatalf("pending Read = %v, want a timeout", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the pending Read returned after %v, want at once", d)
		}

		// Cleared: data is read again. A write deadline in the past fails Write.
		b.SetDeadline(time.Time{})
		a.Write([]byte("hi"))
		if n, err := b.Read(buf); err != nil || string(buf[:n]) != "hi" {
			t.Fatalf("Read = %q, %v; want hi", buf[:n], err)
		}
		a.SetWriteDeadline(time.Now())
		if _, err := a.Write([]byte("x")); !isTimeout(err) {
			t.Fatalf("Write after its deadline = %v, want a timeout", err)
		}
	})
}

// After Close the peer drains what was written and reads io.EOF; the closed
// end's Read and Write fail with net.ErrClosed, a pending Read included.
func TestMemConnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := memConnPair("a", "b")
		errc := make(chan error)
		go func() {
			_, err := a.Read(make([]byte, 1))
			errc <- err
		}()
		synctest.Wait()
		a.Write([]byte("bye"))
		if err := a.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Errorf("pending Read = %v, want net.ErrClosed", err)
		}
		if _, err := a.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read on closed end = %v, want net.ErrClosed", err)
		}
		if _, err := a.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Write on closed end = %v, want net.ErrClosed", err)
		}
		if got, err := io.ReadAll(b); err != nil || string(got) != "bye" {
			t.Errorf("peer ReadAll = %q, %v; want bye then EOF", got, err)
		}
		if _, err := b.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Write to closed peer = %v, want io.ErrClosedPipe", err)
		}
		b.Close()
	})
}
