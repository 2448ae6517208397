package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
	"github.com/redcoord/redcoord/rlock"
)

// watching runs watch with args until the test's cleanup, writing to the
// returned buffer.
func watching(t *testing.T, args ...string) *recorder {
	out := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		var errb recorder
		if code := runContext(ctx, args, strings.NewReader(""), out, &errb); code != exitOK {
			t.Errorf("watch: exit status %d: %s", code, errb.String())
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return out
}

// changes decodes watch -json's documents, one per line.
func changes(t *testing.T, out *recorder) []State {
	var sts []State
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var st State
		if err := json.Unmarshal([]byte(line), &st); err != nil {
			t.Fatalf("watch -json line %q: %v", line, err)
		}
		sts = append(sts, st)
	}
	return sts
}

// lastHolder returns the owner of the last change's first holder, "" if
// none.
func lastHolder(t *testing.T, out *recorder) (string, int) {
	sts := changes(t, out)
	if len(sts) == 0 {
		return "", 0
	}
	st := sts[len(sts)-1]
	if len(st.Holders) == 0 {
		return "", len(sts)
	}
	return st.Holders[0].Owner, len(sts)
}

func TestWatch(t *testing.T) {
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	c := newClient(t, rdb)
	ctx := context.Background()

	// A lock taken and released publishes nothing: the interval's reads
	// see each change, once.
	out := watching(t, "-redis", srv.Addr, "-json", "-interval", "20ms", "watch", "w:1")
	eventually(t, func() bool { _, n := lastHolder(t, out); return n == 1 })
	m := rlock.New(c, "w:1")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { o, n := lastHolder(t, out); return n == 2 && strings.HasPrefix(o, c.ID()) })
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { o, n := lastHolder(t, out); return n == 3 && o == "" })
	time.Sleep(100 * time.Millisecond) // five more reads without a change
	if _, n := lastHolder(t, out); n != 3 {
		t.Errorf("%d changes printed, want 3:\n%s", n, out.String())
	}

	// A fair lock's hand-off publishes its grant: watch sees it long
	// before its interval.
	a, b := rfairlock.New(c, "w:2"), rfairlock.New(c, "w:2")
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiters(t, func(int) bool { return rdb.LLen(ctx, "rc:{w:2}:queue").Val() == 1 },
		func(ctx context.Context) { _ = b.Lock(ctx) })
	out = watching(t, "-redis", srv.Addr, "-json", "-interval", "1h", "watch", "w:2")
	eventually(t, func() bool { _, n := lastHolder(t, out); return n == 1 })
	first, _ := lastHolder(t, out)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { o, n := lastHolder(t, out); return n >= 2 && o != "" && o != first })

	// A waiter's age: the keys' where they keep it; for an entry that
	// keeps none (written by hand here as a version that kept no time
	// wrote it), how long watch has seen it, which grows from 0.
	h := rfairlock.New(c, "w:3")
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	queued := func(i int) bool { return rdb.LLen(ctx, "rc:{w:3}:queue").Val() == int64(i) }
	waiters(t, queued, func(ctx context.Context) { _ = rfairlock.New(c, "w:3").Lock(ctx) })
	deadline := float64(rdb.Time(ctx).Val().Add(time.Minute).UnixMilli())
	rdb.RPush(ctx, "rc:{w:3}:queue", "old:1:1")
	rdb.ZAdd(ctx, "rc:{w:3}:alive", redis.Z{Score: deadline, Member: "old:1:1"})
	rdb.HSet(ctx, "rc:{w:3}:waiting", "old:1:1", "30000 ")
	out = watching(t, "-redis", srv.Addr, "-json", "-interval", "20ms", "watch", "w:3")
	eventually(t, func() bool { return len(changes(t, out)) == 1 })
	time.Sleep(50 * time.Millisecond)
	waiters(t, func(int) bool { return queued(3) }, func(ctx context.Context) { _ = rfairlock.New(c, "w:3").Lock(ctx) })
	eventually(t, func() bool { return len(changes(t, out)) == 2 })
	q := changes(t, out)[1].Queue
	if len(q) != 3 || q[0].AgeMS == nil || *q[0].AgeMS < 50 || q[0].SeenMS != 0 {
		t.Errorf("the first waiter as watch saw it: %+v", q)
	}
	if len(q) == 3 && (q[1].AgeMS != nil || q[1].SeenMS < 50) {
		t.Errorf("the entry without a time as watch saw it: %+v", q[1])
	}
	if len(q) == 3 && q[0].AgeMS != nil && (q[2].AgeMS == nil || *q[2].AgeMS > *q[0].AgeMS || q[2].SeenMS != 0) {
		t.Errorf("the last waiter as watch saw it: %+v", q[2])
	}

	// The text form: a time line, then the state.
	text := watching(t, "-redis", srv.Addr, "-interval", "20ms", "watch", "w:2")
	eventually(t, func() bool { return strings.Contains(text.String(), "holder:") })
	if !strings.HasPrefix(text.String(), "--- ") {
		t.Errorf("watch prints:\n%s", text.String())
	}

	// -for ends it, with exit status 0, a name without keys too.
	r := cli(t, "", "-redis", srv.Addr, "-for", "100ms", "watch", "w:none").wantCode(t, exitOK)
	if !strings.Contains(r.stdout, "w:none: no state") {
		t.Errorf("stdout: %s", r.stdout)
	}
}
