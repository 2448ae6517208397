package redcoord_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// fencedStore is the storage layer that fencing tokens are for: it keeps a
// value and the highest token that wrote it, refuses a write whose token is
// lower (the same holder may write again), and logs every write.
var fencedStore = redis.NewScript(`
-- KEYS[1] the store (a hash: token, value)   KEYS[2] its log (a list)
-- ARGV[1] the writer's fencing token          ARGV[2] the value
-- Reply: 1 stored; 0 refused, a higher token has written.
local high = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) < high then
  redis.call('RPUSH', KEYS[2], 'refused ' .. ARGV[1] .. ' ' .. ARGV[2])
  return 0
end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
redis.call('RPUSH', KEYS[2], 'stored ' .. ARGV[1] .. ' ' .. ARGV[2])
return 1
`)

const (
	storeKey, storeLog = "store", "store:log"
	childAddrEnv       = "REDCOORD_FAULT_CHILD_ADDR" // set only in the child of TestFaultHolderPaused
	childSays          = "fault-child:"              // prefixes every line the child reports
)

// fencedWrite writes value to the fenced store with token and reports whether
// the store took it.
func fencedWrite(ctx context.Context, rdb redis.Scripter, token uint64, value string) (bool, error) {
	n, err := fencedStore.Run(ctx, rdb, []string{storeKey, storeLog}, token, value).Int()
	return n == 1, err
}

// TestFaultHolderChild is the holder process of TestFaultHolderPaused, and
// returns at once anywhere else. It takes the lock, reports its token,
// and then writes to the fenced store every 20ms, without looking at Lost
// first (a holder may always be paused between that look and its write),
// until it has seen both its Lost closed and a write refused.
func TestFaultHolderChild(t *testing.T) {
	addr := os.Getenv(childAddrEnv)
	if addr == "" {
		return
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := redcoord.New(rdb, redcoord.WithLeaseTTL(faultTTL))
	require.NoError(t, err)
	defer c.Close(ctx)
	mu := rlock.New(c, "fenced")
	require.NoError(t, mu.Lock(ctx))
	token := mu.Token()
	fmt.Println(childSays, "token", token)
	lost, refused := false, false
	for i := 0; i < 1000 && !(lost && refused); i++ { // bounded: 1000 writes, 20s of running
		stored, err := fencedWrite(ctx, rdb, token, "child-"+strconv.Itoa(i))
		require.NoError(t, err)
		refused = refused || !stored
		lost = lost || locktest.IsClosed(mu.Lost())
		fmt.Println(childSays, "write", i, "stored", stored, "lost", lost)
		time.Sleep(20 * time.Millisecond)
	}
	err = mu.Unlock(ctx)
	fmt.Println(childSays, "done lost", lost, "refused", refused, "unlock-lease-lost", errors.Is(err, redcoord.ErrLeaseLost))
}

// A holder process paused (SIGSTOP) past its lease: another Client takes
// the lock with a higher token and writes to the fenced store; when the
// holder runs again, its Lost closes and the store refuses its stale
// writes, so nothing the old holder writes lands after its successor's.
func TestFaultHolderPaused(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Real(t)
	rdb := srv.Client(t)
	child := startChild(t, srv.Addr)

	old, err := strconv.ParseUint(child.expect(t, "token")[1], 10, 64)
	require.NoError(t, err)
	child.expect(t, "write", "0", "stored", "true", "lost", "false")
	child.signal(t, syscall.SIGSTOP)
	stopped := time.Now()

	mu := rlock.New(faultClient(t, srv), "fenced")
	lctx, cancel := context.WithTimeout(ctx, faultWait)
	defer cancel()
	require.NoError(t, mu.Lock(lctx), "the lock is free once the paused holder's lease runs out")
	took := time.Now()
	assert.Greater(t, mu.Token(), old, "the successor's token is higher")
	stored, err := fencedWrite(ctx, rdb, mu.Token(), "successor")
	require.NoError(t, err)
	require.True(t, stored, "the store takes the successor's write")
	child.signal(t, syscall.SIGCONT)
	resumed := time.Now()

	done := child.expect(t, "done")
	assert.Equal(t, []string{"done", "lost", "true", "refused", "true", "unlock-lease-lost", "true"}, done,
		"the child's Lost closed, its stale write was refused and its Unlock reported the loss")
	child.wait(t)
	value, err := rdb.HGet(ctx, storeKey, "value").Result()
	require.NoError(t, err)
	assert.Equal(t, "successor", value, "the stale holder overwrote nothing")
	entries, err := rdb.LRange(ctx, storeLog, 0, -1).Result()
	require.NoError(t, err)
	after, refused := false, 0
	for _, e := range entries {
		if e == fmt.Sprintf("stored %d successor", mu.Token()) {
			after = true
		} else if after {
			assert.True(t, strings.HasPrefix(e, "refused "), "after the successor's write: %q", e)
			refused++
		}
	}
	assert.Positive(t, refused, "the child wrote after its successor, and was refused: %v", entries)
	count, err := mu.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), count, "the stale holder's Unlock left its successor's hold alone")
	require.NoError(t, mu.Unlock(ctx))
	t.Logf("holder paused %v; successor took the lock %v into the pause; %d stale writes refused after the resume",
		resumed.Sub(stopped).Round(time.Millisecond), took.Sub(stopped).Round(time.Millisecond), refused)
}

// childProc is the holder process of TestFaultHolderPaused: this test binary
// run again with only TestFaultHolderChild.
type childProc struct {
	cmd    *exec.Cmd
	lines  <-chan string // what it reports, prefix removed; closed at its exit
	seen   []string      // every line read so far, for failure messages
	exited chan struct{} // closed once it is reaped
}

// startChild starts the child on addr. t.Cleanup resumes, kills and reaps
// it and waits for its output to end, whatever state it is in.
func startChild(t *testing.T, addr string) *childProc {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "child.stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultHolderChild$", "-test.count=1", "-test.timeout=60s")
	// atexit_sleep_ms=0: a race-enabled child otherwise idles a second
	// before it exits.
	cmd.Env = append(os.Environ(), childAddrEnv+"="+addr,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stdout, cmd.Stderr = w, stderr
	err = cmd.Start()
	_ = w.Close() // the child holds its own copy: the pipe ends when it exits
	if err != nil {
		_ = r.Close()
		require.NoError(t, err)
	}
	lines := make(chan string)
	c := &childProc{cmd: cmd, lines: lines, exited: make(chan struct{})}
	go func() {
		defer close(c.exited)
		_ = cmd.Wait()
	}()
	go func() {
		defer close(lines)
		defer r.Close()
		for sc := bufio.NewScanner(r); sc.Scan(); {
			if rest, ok := strings.CutPrefix(sc.Text(), childSays+" "); ok {
				lines <- rest
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill() // an error means it has exited already
		<-c.exited
		for range lines { // until the reader sees the pipe's end
		}
		if t.Failed() {
			out, _ := os.ReadFile(stderr.Name())
			t.Logf("child reported %q; its stderr:\n%s", c.seen, out)
		}
	})
	return c
}

// expect reads the child's lines until one starts with the given fields
// and returns that line's fields, or calls t.Fatal after faultWait or at
// the child's exit.
func (c *childProc) expect(t *testing.T, fields ...string) []string {
	t.Helper()
	timer := time.NewTimer(faultWait)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child exited before reporting %q; it reported %q", fields, c.seen)
			}
			c.seen = append(c.seen, line)
			if f := strings.Fields(line); len(f) >= len(fields) && slices.Equal(f[:len(fields)], fields) {
				return f
			}
		case <-timer.C:
			t.Fatalf("the child did not report %q within %v; it reported %q", fields, faultWait, c.seen)
		}
	}
}

// wait waits for the child to exit, at most faultWait, and checks that its
// test passed.
func (c *childProc) wait(t *testing.T) {
	t.Helper()
	timer := time.NewTimer(faultWait)
	defer timer.Stop()
	select {
	case <-c.exited:
		assert.True(t, c.cmd.ProcessState.Success(), "the child's test passes: %v", c.cmd.ProcessState)
	case <-timer.C:
		t.Fatalf("the child did not exit within %v of reporting done", faultWait)
	}
}

func (c *childProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(sig), "signal %v to the child", sig)
}

// A server that evicts keys with a TTL (volatile-ttl: the shortest TTL
// first, and a lease is the shortest there is) gets the Client's warning,
// and under memory pressure deletes a held lock: the lock can be taken
// again at once, while its holder learns of the loss only at its next
// renewal, which finds the hold gone. The new holder's token is higher.
func TestFaultEviction(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Real(t, "--maxmemory", "2mb", "--maxmemory-policy", "volatile-ttl")
	rdb := srv.Client(t)
	log := &logBuffer{}
	c := faultClient(t, srv, redcoord.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	mu := rlock.New(c, "evicted")
	require.NoError(t, mu.Lock(ctx))
	old, lost := mu.Token(), closedAt(t, mu.Lost())
	locktest.Eventually(t, func() bool { return len(log.lines("WARN")) > 0 }, "the Client warns of the policy")
	require.Len(t, log.lines("WARN"), 1)
	assert.Contains(t, log.lines("WARN")[0], "maxmemory-policy=volatile-ttl")

	// Fill memory with keys that have no TTL, which volatile-ttl cannot
	// evict, until the lock is gone; then free it again, so that the
	// renewal is not refused for want of memory.
	value := strings.Repeat("x", 4096)
	var filler []string
	for len(filler) < 2000 { // bounded: 8MB, four times maxmemory
		filler = append(filler, "filler:"+strconv.Itoa(len(filler)))
		err := rdb.Set(ctx, filler[len(filler)-1], value, 0).Err()
		if err != nil && !strings.HasPrefix(err.Error(), "OOM") {
			require.NoError(t, err)
		}
		if rdb.Exists(ctx, "rc:{evicted}:lock").Val() == 0 {
			break
		}
	}
	evicted := time.Now()
	require.Zero(t, rdb.Exists(ctx, "rc:{evicted}:lock").Val(), "the lock is evicted")
	require.NoError(t, rdb.Del(ctx, filler...).Err())

	other := rlock.New(faultClient(t, srv), "evicted")
	ok, err := other.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "the evicted lock is free for anyone")
	took := time.Now()
	holderTold := locktest.IsClosed(mu.Lost())
	assert.Greater(t, other.Token(), old, "the next holder's token is higher, fence counter evicted or not")

	lostAt, closed := <-lost
	require.True(t, closed, "the holder's Lost closes")
	assert.NotEmpty(t, log.lines("WARN")[1:], "the loss is logged")
	assert.Contains(t, strings.Join(log.lines("WARN"), "\n"), "hold is gone", "a renewal found the hold gone")
	assert.ErrorIs(t, mu.Unlock(ctx), redcoord.ErrLeaseLost)
	require.NoError(t, other.Unlock(ctx))
	t.Logf("lock evicted after %d filler keys of 4KB; taken again %v later (holder told by then: %v); holder's Lost closed %v after the eviction",
		len(filler), took.Sub(evicted).Round(time.Millisecond), holderTold, lostAt.Sub(evicted).Round(time.Millisecond))
}
