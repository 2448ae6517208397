package hub

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// faultDialer wraps the connections a cluster client (and so the Hub's
// per-node clients, which copy its Dialer) dials, to inject faults.
const hangCap = 4 * time.Second

type faultDialer struct {
	failPing atomic.Bool  // the next PING written by a subscriber connection fails
	fired    atomic.Int32 // failed PINGs
	hangAddr atomic.Value // string: dials to it hang until their context ends

	gateMu sync.Mutex
	gate   chan struct{} // non-nil: subscriber connections' reads wait for it to close
}

func (d *faultDialer) closeGate() {
	d.gateMu.Lock()
	d.gate = make(chan struct{})
	d.gateMu.Unlock()
}

func (d *faultDialer) openGate() {
	d.gateMu.Lock()
	close(d.gate)
	d.gate = nil
	d.gateMu.Unlock()
}

func (d *faultDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if a, _ := d.hangAddr.Load().(string); a == addr {
		// A host that is down: SYNs go unanswered until the caller's ctx
		// ends or, as a net.Dialer without Timeout does after the kernel's
		// SYN retries (about 2 min on Linux), much later; capped here.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(hangCap):
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ETIMEDOUT}
		}
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: c, d: d}, nil
}

type faultConn struct {
	net.Conn
	d          *faultDialer
	subscriber atomic.Bool
}

func (c *faultConn) Write(b []byte) (int, error) {
	s := strings.ToLower(string(b))
	if strings.Contains(s, "ssubscribe") {
		c.subscriber.Store(true)
	}
	if c.subscriber.Load() && s == "*1\r\n$4\r\nping\r\n" && c.d.failPing.CompareAndSwap(true, false) {
		c.d.fired.Add(1)
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}
	}
	return c.Conn.Write(b)
}

func (c *faultConn) Read(b []byte) (int, error) {
	if c.subscriber.Load() {
		c.d.gateMu.Lock()
		g := c.d.gate
		c.d.gateMu.Unlock()
		if g != nil {
			<-g
		}
	}
	return c.Conn.Read(b)
}

func shardNumSub(t *testing.T, addr, channel string) int64 {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer func() { _ = rdb.Close() }()
	m, err := rdb.PubSubShardNumSub(testCtx(t), channel).Result()
	require.NoError(t, err)
	return m[channel]
}

// A failed write on a node's connection (here the health check's PING)
// makes go-redis reconnect that PubSub by itself and resubscribe all its
// shard channels in one SSUBSCRIBE, which the server refuses with CROSSSLOT
// when they span slots. The Hub drops such a connection and moves its
// channels one by one: the server has them all subscribed again.
func TestShardedHubFailedPing(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 30 s health check")
	}
	cl := redistest.StartCluster(t, 3, 0)
	d := &faultDialer{}
	rdb := cl.Client(t, func(o *redis.ClusterOptions) { o.Dialer = d.dial })
	pub := cl.Client(t)
	h := newHub(t, rdb)

	var node string
	var chs []string
	for m, cs := range channelsPerMaster(cl, 2) {
		node, chs = m, cs
		break
	}
	require.NotEqual(t, KeySlot(chs[0]), KeySlot(chs[1]), "two slots on one node")
	a := subscribe(t, h, chs[0], "")
	_ = subscribe(t, h, chs[1], "")
	for _, ch := range chs {
		require.Equal(t, int64(1), shardNumSub(t, node, ch))
	}

	d.failPing.Store(true)
	for deadline := time.Now().Add(healthInterval + 10*time.Second); d.fired.Load() == 0; {
		require.True(t, time.Now().Before(deadline), "the health-check PING was never written")
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // let go-redis reconnect and the server answer CROSSSLOT

	for _, ch := range chs {
		eventually(t, func() bool { return shardNumSub(t, node, ch) >= 1 },
			ch+" is subscribed again after the connection was replaced")
	}
	take(a)
	require.NoError(t, pub.SPublish(testCtx(t), chs[0], One()).Err())
	awaitWake(t, a, "a message after the lost connection")
}

// An error reply names no channel. When the server's own "sunsubscribe X"
// (X's slot migrated away) crosses the Hub's SUNSUBSCRIBE X, the late reply
// to the latter is MOVED for X's slot: it must not be charged to the next
// command, an SSUBSCRIBE of a channel Y of another slot that stays put.
func TestShardedHubCrossedSunsubscribe(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	d := &faultDialer{}
	rdb := cl.Client(t, func(o *redis.ClusterOptions) { o.Dialer = d.dial })
	h := newHub(t, rdb)

	var node string
	var chs []string
	for m, cs := range channelsPerMaster(cl, 2) {
		node, chs = m, cs
		break
	}
	x, y := chs[0], chs[1]
	require.NotEqual(t, KeySlot(x), KeySlot(y))
	var to string
	for _, m := range cl.Masters() {
		if m != node {
			to = m
			break
		}
	}
	sx := subscribe(t, h, x, "")
	require.Equal(t, 1, h.Stats().Nodes)

	d.closeGate() // the Hub's reader stops reading (a busy reader, a slow scheduler)
	// Complete the read the reader is blocked in, so that its next one waits.
	require.NoError(t, cl.Client(t).SPublish(testCtx(t), x, To("nobody", "")).Err())
	time.Sleep(200 * time.Millisecond)
	cl.MoveSlot(t, redisSlot(t, rdb, x), to) // the server sends "sunsubscribe x"
	sx.Close()                               // SUNSUBSCRIBE x: answered -MOVED
	done := make(chan *Subscription)
	go func() {
		s, err := h.Subscribe(context.Background(), y, "") // SSUBSCRIBE y: answered "ssubscribe y"
		assert.NoError(t, err)
		done <- s
	}()
	time.Sleep(200 * time.Millisecond)
	d.openGate()
	sy := <-done
	require.NotNil(t, sy)
	defer sy.Close()
	time.Sleep(500 * time.Millisecond)

	st := h.Stats()
	t.Logf("y subscribed on its owner %s: %d, on %s: %d; stats %+v", node, shardNumSub(t, node, y), to, shardNumSub(t, to, y), st)
	assert.Equal(t, int64(0), st.Moves, "y never moved: its slot stayed on %s", node)
	assert.Equal(t, 1, st.Nodes, "no channel waited on lives on %s", to)
}
