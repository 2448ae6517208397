package redistest

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// simConn is one connection dialed through [Net.Dialer].
type simConn struct {
	net.Conn // the real connection
	n        *Net
	tag      int
	dial     func() (net.Conn, error) // dials the same server through the base dialer
	lat      time.Duration            // how late a passed script call's reply comes

	wmu     sync.Mutex // serialises Write; protects parser, hello, helloN
	parser  respParser
	hello   []byte    // the handshake written (HELLO, AUTH, SELECT, CLIENT): a ghost replays it
	helloN  int       // commands in hello
	closeMu sync.Once // closes closed once

	mu     sync.Mutex    // protects the fields below
	sub    bool          // has written a (S|P)SUBSCRIBE: its replies are cut into messages
	await  *await        // a faulted request whose reply the client waits for
	slow   bool          // a script call passed: its reply comes lat late
	out    []byte        // a held request's late reply, to return
	in     []byte        // subscriber: bytes read, not yet a whole reply
	segs   []segment     // subscriber: whole replies, each to return at its time
	readDL time.Time     // the read deadline; zero: none
	broken bool          // broken by a fault: reads return io.EOF, writes send nothing
	closed chan struct{} // closed by Close or a fault's break
}

// await is a faulted request the client will read the reply of.
type await struct {
	f NetFault
	g *ghost // NetHold: the copy whose reply is the client's
}

// segment is a whole reply of a subscriber connection and when it arrives.
type segment struct {
	b  []byte
	at time.Time
}

// Write passes b to the server, unless the network faults the request it
// carries (see [Net]).
func (c *simConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	broken := c.broken
	c.mu.Unlock()
	if broken {
		return len(b), nil
	}
	whole := len(c.parser.buf) == 0
	cmds := c.parser.feed(b)
	whole = whole && len(c.parser.buf) == 0 && len(cmds) > 0
	script, handshake := false, whole
	for _, args := range cmds {
		if len(args) == 0 {
			whole = false
			continue
		}
		args[0] = strings.ToUpper(args[0])
		switch args[0] {
		case "SUBSCRIBE", "SSUBSCRIBE", "PSUBSCRIBE":
			c.mu.Lock()
			c.sub = true
			c.mu.Unlock()
		case "EVALSHA", "EVAL", "EVALSHA_RO", "EVAL_RO", "FCALL", "FCALL_RO":
			script = true
		}
		switch args[0] {
		case "HELLO", "AUTH", "SELECT", "CLIENT":
		default:
			handshake = false
		}
	}
	if handshake {
		c.hello = append(c.hello, b...)
		c.helloN += len(cmds)
	}
	c.mu.Lock()
	sub := c.sub
	c.mu.Unlock()
	if !script || !whole || sub {
		c.n.wrote(len(cmds))
		return c.Conn.Write(b)
	}
	what, call := describe(cmds)
	f := c.n.decide(c.tag, false, call, what)
	switch f.Kind {
	case NetHold:
		c.setAwait(&await{f: f, g: c.n.deliverLater(c, b, len(cmds), what, f.D)})
		return len(b), nil
	case NetDropBefore:
		c.setAwait(&await{f: f})
		return len(b), nil
	case NetDropAfter:
		c.setAwait(&await{f: f})
	case NetDup:
		c.n.deliverLater(c, b, len(cmds), what, f.D)
	}
	if f.Kind != NetDropAfter && c.lat > 0 {
		c.mu.Lock()
		c.slow = true
		c.mu.Unlock()
	}
	return c.Conn.Write(b)
}

func (c *simConn) setAwait(a *await) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.await = a
}

// Read returns the server's replies as the network delivers them.
func (c *simConn) Read(b []byte) (int, error) {
	for {
		c.mu.Lock()
		switch {
		case len(c.out) > 0:
			n := copy(b, c.out)
			c.out = c.out[n:]
			c.mu.Unlock()
			return n, nil
		case c.broken:
			c.mu.Unlock()
			return 0, io.EOF
		case c.sub:
			c.mu.Unlock()
			return c.readSub(b)
		}
		a := c.await
		c.mu.Unlock()
		if a == nil {
			return c.readSlow(b)
		}
		if err := c.readAwait(b, a); err != nil {
			return 0, err
		}
	}
}

// readSlow reads a reply, lat late if it answers a script call that passed.
func (c *simConn) readSlow(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	slow := c.slow && n > 0
	if slow {
		c.slow = false
	}
	c.mu.Unlock()
	if slow {
		t := time.NewTimer(c.lat)
		select {
		case <-t.C:
		case <-c.closed:
		}
		t.Stop()
	}
	return n, err
}

// readAwait waits for what a faulted request's client reads: a held
// request's late reply (then in c.out), or the error its fault makes.
func (c *simConn) readAwait(b []byte, a *await) error {
	switch {
	case a.f.Kind == NetHold:
		select {
		case <-a.g.done:
		case <-c.closed:
			return io.EOF
		case <-c.deadline():
			return c.timeout()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.g.reply == nil {
			c.breakLocked()
			return fmt.Errorf("redistest: held request not delivered: %w", io.EOF)
		}
		if c.await == a {
			c.await = nil
			c.out = append(c.out, a.g.reply...)
		}
		return nil
	case a.f.Timeout:
		select {
		case <-c.closed:
			return io.EOF
		case <-c.deadline():
			return c.timeout()
		}
	case a.f.Kind == NetDropAfter:
		_, _ = c.Conn.Read(b) // the reply comes: the request was applied
	}
	if a.f.D > 0 { // the reset takes its time to come
		t := time.NewTimer(a.f.D)
		select {
		case <-t.C:
		case <-c.closed:
		}
		t.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.breakLocked()
	return fmt.Errorf("redistest: connection reset by the network (%s): %w", a.f.Kind, io.EOF)
}

// timeout returns a read timeout. c stays as it is, as a socket does: the
// next read times out again unless the deadline moved, and the client, which
// has lost track of its replies, closes c.
func (c *simConn) timeout() error {
	return fmt.Errorf("redistest: no reply before the read deadline: %w", os.ErrDeadlineExceeded)
}

// deadline returns a channel that fires at the read deadline, nil if none.
func (c *simConn) deadline() <-chan time.Time {
	c.mu.Lock()
	dl := c.readDL
	c.mu.Unlock()
	if dl.IsZero() {
		return nil
	}
	return time.After(time.Until(dl))
}

// breakLocked closes the real connection and marks c broken. c.mu is held.
func (c *simConn) breakLocked() {
	c.broken = true
	c.await = nil
	c.signalClosed()
	_ = c.Conn.Close()
}

func (c *simConn) signalClosed() { c.closeMu.Do(func() { close(c.closed) }) }

// Close closes the real connection. A held request stays in flight.
func (c *simConn) Close() error {
	c.signalClosed()
	err := c.Conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken {
		return nil
	}
	return err
}

// SetDeadline, SetReadDeadline and SetWriteDeadline pass through, and
// succeed on a connection a fault broke, as on one whose peer went away;
// the read deadline is recorded for the waits the network adds.

func (c *simConn) SetDeadline(t time.Time) error {
	c.setReadDL(t)
	return c.unlessBroken(c.Conn.SetDeadline(t))
}

func (c *simConn) SetReadDeadline(t time.Time) error {
	c.setReadDL(t)
	return c.unlessBroken(c.Conn.SetReadDeadline(t))
}

func (c *simConn) SetWriteDeadline(t time.Time) error {
	return c.unlessBroken(c.Conn.SetWriteDeadline(t))
}

func (c *simConn) unlessBroken(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken {
		return nil
	}
	return err
}

func (c *simConn) setReadDL(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDL = t
}
