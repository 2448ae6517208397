package redistest

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// faultConn is one connection dialed through [Faults.Dialer].
type faultConn struct {
	net.Conn
	f *Faults

	subscriber atomic.Bool   // has written a (S|P)SUBSCRIBE
	dropNext   atomic.Int64  // DropReply faults waiting for this conn's next reply bytes
	broken     atomic.Bool   // broken by a fault: behaves as if the peer went away
	delayNext  atomic.Int64  // nanoseconds to hold the next reply bytes back (DelayReply)
	readDL     atomic.Int64  // read deadline, UnixNano; 0: none
	closeMu    sync.Mutex    // protects closed
	closed     chan struct{} // closed by breakConn or Close: ends a held reply's wait
	isClosed   bool          // closed has been closed

	wmu    sync.Mutex // serialises Write; protects parser
	parser respParser
}

// swallowed reports whether c is blackholed or stalled right now.
func (c *faultConn) swallowed() bool {
	return c.f.stall.Load() || (c.f.blackhole.Load() && c.subscriber.Load())
}

// Write parses the commands in b, then passes b on unless c is broken or
// blackholed, in which case it reports success and sends nothing.
func (c *faultConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.broken.Load() {
		return len(b), nil
	}
	cmds := c.parser.feed(b)
	for _, args := range cmds {
		if len(args) == 0 {
			continue
		}
		args[0] = strings.ToUpper(args[0])
		switch args[0] {
		case "SUBSCRIBE", "SSUBSCRIBE", "PSUBSCRIBE":
			c.subscriber.Store(true)
		}
	}
	if c.swallowed() {
		return len(b), nil
	}
	// Arm drops only for commands that are about to reach the server.
	var taken []func([]string) bool
	for _, args := range cmds {
		if len(args) == 0 {
			continue
		}
		if match := c.f.take(args); match != nil {
			taken = append(taken, match)
		}
		if d := c.f.takeDelay(args); d > 0 {
			c.delayNext.Add(int64(d))
		}
	}
	c.dropNext.Add(int64(len(taken)))
	n, err := c.Conn.Write(b)
	if err != nil && n == 0 && len(taken) > 0 {
		// Nothing was sent: the faults are not spent on this command.
		c.dropNext.Add(-int64(len(taken)))
		c.f.rearm(taken)
	}
	return n, err
}

// Read returns the server's bytes, except that it drops the first reply
// bytes after an armed DropReply (breaking c and returning io.EOF), discards
// everything while c is blackholed, returns a subscriber's bytes late under
// DelaySubscribers, and returns io.EOF once c is broken.
func (c *faultConn) Read(b []byte) (int, error) {
	for {
		if c.f.swallowTimeout.Load() && c.swallowed() && !c.broken.Load() {
			return 0, fmt.Errorf("redistest: read swallowed: %w", os.ErrDeadlineExceeded)
		}
		n, err := c.Conn.Read(b)
		if c.broken.Load() {
			return 0, io.EOF
		}
		if n > 0 {
			if pending := c.dropNext.Swap(0); pending > 0 {
				c.breakConn()
				c.f.fired.Add(pending)
				return 0, fmt.Errorf("redistest: reply dropped by DropReply: %w", io.EOF)
			}
			if d := time.Duration(c.delayNext.Swap(0)); d > 0 {
				c.f.delayed.Add(1)
				if err := c.hold(d); err != nil {
					return 0, err
				}
			}
			if c.swallowed() {
				if err != nil {
					return 0, err
				}
				continue // bounded by the read deadline and by Close
			}
			if d := time.Duration(c.f.late.Load()); d > 0 && c.subscriber.Load() {
				time.Sleep(d)
			}
		}
		return n, err
	}
}

// hold waits d before a reply is passed on, or until the read deadline (the
// reply is then lost: c breaks and a timeout error is returned), or until c
// is closed (io.EOF).
func (c *faultConn) hold(d time.Duration) error {
	timeout := false
	if dl := c.readDL.Load(); dl != 0 {
		if left := time.Until(time.Unix(0, dl)); left < d {
			d, timeout = max(left, 0), true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.closedCh():
		return io.EOF
	}
	if timeout {
		c.breakConn()
		return fmt.Errorf("redistest: reply held by DelayReply past the read deadline: %w", os.ErrDeadlineExceeded)
	}
	return nil
}

// closedCh returns the channel closed when c is broken or closed.
func (c *faultConn) closedCh() chan struct{} {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed == nil {
		c.closed = make(chan struct{})
		if c.isClosed {
			close(c.closed)
		}
	}
	return c.closed
}

// signalClosed closes closedCh's channel once.
func (c *faultConn) signalClosed() {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if !c.isClosed {
		c.isClosed = true
		if c.closed != nil {
			close(c.closed)
		}
	}
}

// breakConn closes the real connection and marks c broken. It is idempotent.
func (c *faultConn) breakConn() {
	if c.broken.CompareAndSwap(false, true) {
		c.signalClosed()
		_ = c.Conn.Close()
	}
}

// Close closes the real connection and stops tracking c. Closing a broken
// connection succeeds.
func (c *faultConn) Close() error {
	c.f.forget(c)
	c.signalClosed()
	err := c.Conn.Close()
	if c.broken.Load() {
		return nil
	}
	return err
}

// SetDeadline, SetReadDeadline and SetWriteDeadline pass through, and
// succeed on a broken connection as they would on one whose peer went away.

func (c *faultConn) SetDeadline(t time.Time) error {
	c.setReadDL(t)
	err := c.Conn.SetDeadline(t)
	if c.broken.Load() {
		return nil
	}
	return err
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.setReadDL(t)
	err := c.Conn.SetReadDeadline(t)
	if c.broken.Load() {
		return nil
	}
	return err
}

func (c *faultConn) SetWriteDeadline(t time.Time) error {
	err := c.Conn.SetWriteDeadline(t)
	if c.broken.Load() {
		return nil
	}
	return err
}

// setReadDL records the read deadline for a held reply (DelayReply).
func (c *faultConn) setReadDL(t time.Time) {
	if t.IsZero() {
		c.readDL.Store(0)
		return
	}
	c.readDL.Store(t.UnixNano())
}
