package redistest

import (
	"net"
	"time"
)

// ghostTimeout bounds one ghost connection's exchange with its server.
const ghostTimeout = time.Second

// ghost is one copy of a request that [Net] delivers late, on a connection
// of its own.
type ghost struct {
	req    []byte // the request as written
	k      int    // its commands
	what   string // as the hook names it
	sentAt int64  // Net.sent once it was written
	done   chan struct{}
	reply  []byte // its k replies as the server wrote them; nil if the delivery failed
}

// deliverLater has a copy of req (k commands, written on c) delivered d from
// now, and returns it; its done is closed when the delivery has ended,
// delivered or not.
func (n *Net) deliverLater(c *simConn, req []byte, k int, what string, d time.Duration) *ghost {
	g := &ghost{req: append([]byte(nil), req...), k: k, what: what, done: make(chan struct{})}
	n.mu.Lock()
	g.sentAt = n.sent
	stopping := n.stopping
	if !stopping {
		n.wg.Add(1)
	}
	n.mu.Unlock()
	if stopping {
		close(g.done)
		return g
	}
	hello := append([]byte(nil), c.hello...)
	go n.deliver(g, c, hello, c.helloN, d)
	return g
}

// deliver waits d, unless n closes first, then dials c's server through the
// base dialer, replays c's handshake (helloN commands in hello) and g's
// request, and keeps the request's replies in g.
func (n *Net) deliver(g *ghost, c *simConn, hello []byte, helloN int, d time.Duration) {
	defer n.wg.Done()
	defer close(g.done)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-n.stop:
		return
	}
	conn, err := c.dial()
	if err != nil {
		return
	}
	defer conn.Close()
	n.mu.Lock()
	if n.sent > g.sentAt {
		n.late += g.k
	}
	hook := n.hook
	n.mu.Unlock()
	if hook != nil {
		hook(c.tag, "net: delivered "+g.what)
	}
	if err := conn.SetDeadline(time.Now().Add(ghostTimeout)); err != nil {
		return
	}
	if _, err := conn.Write(append(hello, g.req...)); err != nil {
		return
	}
	replies, err := readReplies(conn, helloN+g.k)
	if err != nil {
		return
	}
	for _, r := range replies[helloN:] {
		g.reply = append(g.reply, r...)
	}
	if g.reply == nil {
		g.reply = []byte{}
	}
}

// readReplies reads k whole replies from conn.
func readReplies(conn net.Conn, k int) ([][]byte, error) {
	var buf, tmp = []byte(nil), make([]byte, 4096)
	var out [][]byte
	for len(out) < k {
		l, err := replyLen(buf)
		if err != nil {
			return nil, err
		}
		if l > 0 {
			out = append(out, buf[:l:l])
			buf = buf[l:]
			continue
		}
		m, err := conn.Read(tmp)
		buf = append(buf, tmp[:m]...)
		if err != nil && m == 0 {
			return nil, err
		}
	}
	return out, nil
}
