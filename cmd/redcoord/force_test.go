package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
	"github.com/redcoord/redcoord/rrwlock"
)

// prompted starts force-unlock of name on the server at addr, without -y,
// and returns once it asks: yes answers it; code has its exit status.
func prompted(t *testing.T, addr, name string) (yes func(), code <-chan int, out, errb *recorder) {
	in, answer := io.Pipe()
	out, errb = &recorder{}, &recorder{}
	c := make(chan int, 1)
	go func() {
		c <- runContext(context.Background(), []string{"-redis", addr, "force-unlock", name}, in, out, errb)
	}()
	eventually(t, func() bool { return strings.Contains(errb.String(), "Force-unlock it?") })
	return func() {
		if _, err := answer.Write([]byte("y\n")); err != nil {
			t.Fatal(err)
		}
	}, c, out, errb
}

// TestForceUnlockForcesWhatWasShown: the holder changes between the state
// force-unlock shows and the operator's yes. The hold taken meanwhile is not
// the one confirmed: it stays, and the command says so with status 1.
func TestForceUnlockForcesWhatWasShown(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	a, b := rlock.New(newClient(t, rdb), "orders:3"), rlock.New(newClient(t, rdb), "orders:3")
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	yes, code, out, errb := prompted(t, srv.Addr, "orders:3")
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	yes()
	if c := <-code; c != exitNotFound {
		t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", c, exitNotFound, out.String(), errb.String())
	}
	if ok, _ := b.IsLocked(ctx); !ok {
		t.Fatalf("force-unlock forced a hold taken after the one it showed\nstderr: %s", errb.String())
	}
	if !strings.Contains(errb.String(), "other holds than the ones shown") {
		t.Errorf("stderr does not say the holder changed: %s", errb.String())
	}
	if err := b.Unlock(ctx); err != nil {
		t.Errorf("Unlock of the hold taken meanwhile: %v", err)
	}
}

// force-unlock on a name whose lock key holds another type says so, as
// inspect does, with status 2: it is not "not held".
func TestForceUnlockKeyOfAnotherType(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	rdb.Set(context.Background(), "rc:{odd}:lock", "a string", 0)
	r := cli(t, "", "-redis", srv.Addr, "-y", "force-unlock", "odd").wantCode(t, exitError)
	if want := "rc:{odd}:lock holds another type"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not say %q: %s", want, r.stderr)
	}
}

// A read hold takes no fencing token: a reader that comes while
// force-unlock waits for the yes is not forced either, nor is the write
// lock given meanwhile.
func TestForceUnlockForcesTheReadersShown(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	a, b := rrwlock.New(newClient(t, rdb), "rw:3"), rrwlock.New(newClient(t, rdb), "rw:3")
	if err := a.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	yes, code, out, errb := prompted(t, srv.Addr, "rw:3")
	if err := b.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	yes()
	if c := <-code; c != exitNotFound {
		t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", c, exitNotFound, out.String(), errb.String())
	}
	if err := b.RUnlock(ctx); err != nil {
		t.Errorf("the reader that came meanwhile was forced: RUnlock: %v\nstderr: %s", err, errb.String())
	}
}

// The force itself names the fence's last token as the state shown had it:
// a hold taken between the last read and the force (which -y leaves no
// prompt's time for, but still a round trip) is left alone.
func TestForceNamesTheFenceSeen(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	a, b := rlock.New(newClient(t, rdb), "orders:4"), rlock.New(newClient(t, rdb), "orders:4")
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := defaults()
	cfg.addrs = srv.Addr
	c, err := cfg.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	e := &env{cfg: cfg, conn: c, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	st, err := readOne(ctx, e, "orders:4")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	forced, err := force(ctx, e, "rlock", "orders:4", st.fence)
	if err != nil || forced {
		t.Fatalf("force with the fence shown after another took the lock: %v, %v", forced, err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Errorf("the later hold was forced: Unlock: %v", err)
	}
}
