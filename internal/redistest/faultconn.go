package redistest

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// faultConn is one connection dialed through [Faults.Dialer].
type faultConn struct {
	net.Conn
	f *Faults

	subscriber atomic.Bool  // has written a (S|P)SUBSCRIBE
	dropNext   atomic.Int64 // DropReply faults waiting for this conn's next reply bytes
	broken     atomic.Bool  // broken by a fault: behaves as if the peer went away

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

// breakConn closes the real connection and marks c broken. It is idempotent.
func (c *faultConn) breakConn() {
	if c.broken.CompareAndSwap(false, true) {
		_ = c.Conn.Close()
	}
}

// Close closes the real connection and stops tracking c. Closing a broken
// connection succeeds.
func (c *faultConn) Close() error {
	c.f.forget(c)
	err := c.Conn.Close()
	if c.broken.Load() {
		return nil
	}
	return err
}

// SetDeadline, SetReadDeadline and SetWriteDeadline pass through, and
// succeed on a broken connection as they would on one whose peer went away.

func (c *faultConn) SetDeadline(t time.Time) error {
	err := c.Conn.SetDeadline(t)
	if c.broken.Load() {
		return nil
	}
	return err
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
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
