package redistest

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// memConnPair returns the two ends of an in-memory, buffered, full-duplex
// connection. Unlike net.Pipe, a Write never waits for the peer to read: it
// copies the bytes into an unbounded queue and returns, as a write to a TCP
// socket with room in its kernel buffers would. This matters for pipelines,
// where the client writes every command before it reads any reply while the
// server replies to each command as it reads it.
//
// All waiting is done on channels and timers, never on sync.Cond or a held
// mutex, so a Read blocked inside a testing/synctest bubble is durably
// blocked and deadlines fire on the bubble's fake clock. The ends must be
// made and used inside the same bubble (or outside any).
//
// Semantics follow a TCP connection: Read returns buffered bytes, waiting for
// some if there are none; after the peer's Close it drains what is buffered
// and then returns io.EOF. Read and Write on an end that was closed return an
// error wrapping net.ErrClosed, and Write after the peer's Close returns one
// wrapping io.ErrClosedPipe. A deadline that has passed makes Read and Write
// return an error wrapping os.ErrDeadlineExceeded (a net.Error whose Timeout
// is true), and setting one in the past wakes a pending Read at once.
func memConnPair(aName, bName string) (a, b net.Conn) {
	ab, ba := newMemQueue(), newMemQueue()
	ca := &memConn{local: memAddr(aName), remote: memAddr(bName), rx: ba, tx: ab,
		done: make(chan struct{}), rdl: newDeadline(), wdl: newDeadline()}
	cb := &memConn{local: memAddr(bName), remote: memAddr(aName), rx: ab, tx: ba,
		done: make(chan struct{}), rdl: newDeadline(), wdl: newDeadline()}
	ca.peerDone, cb.peerDone = cb.done, ca.done
	return ca, cb
}

// memAddr is the fixed address of one end of a memConnPair.
type memAddr string

func (a memAddr) Network() string { return "memconn" }
func (a memAddr) String() string  { return string(a) }

// memQueue carries the bytes of one direction of a memConnPair.
type memQueue struct {
	mu     sync.Mutex    // protects buf and closed; never held while waiting
	buf    []byte        // written and not yet read
	closed bool          // the writing end closed: EOF once buf is drained
	ready  chan struct{} // capacity 1: signalled when buf grows or closed is set
}

func newMemQueue() *memQueue { return &memQueue{ready: make(chan struct{}, 1)} }

// signal wakes a reader waiting on q.ready, if it is not already woken.
func (q *memQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// push appends a copy of p.
func (q *memQueue) push(p []byte) {
	q.mu.Lock()
	q.buf = append(q.buf, p...)
	q.mu.Unlock()
	q.signal()
}

// closeWrite records that no more bytes will be pushed.
func (q *memQueue) closeWrite() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// pop copies buffered bytes into p. It reports ok == false when there is
// nothing to return yet, and io.EOF when nothing is buffered and the writer
// has closed.
func (q *memQueue) pop(p []byte) (n int, ok bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.buf) == 0 {
		if q.closed {
			return 0, true, io.EOF
		}
		return 0, false, nil
	}
	n = copy(p, q.buf)
	q.buf = q.buf[n:]
	if len(q.buf) == 0 {
		q.buf = nil
	} else {
		q.signal() // bytes remain: keep another waiting reader awake
	}
	return n, true, nil
}

// memConn is one end of a memConnPair.
type memConn struct {
	local, remote memAddr
	rx, tx        *memQueue     // bytes to read from the peer; bytes written to the peer
	done          chan struct{} // closed by Close
	peerDone      chan struct{} // the peer's done
	closeOnce     sync.Once
	rdl, wdl      *deadline
}

func (c *memConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "memconn", Source: c.local, Addr: c.remote, Err: err}
}

// Read implements net.Conn.
func (c *memConn) Read(p []byte) (int, error) {
	for {
		switch {
		case isClosed(c.done):
			return 0, c.opError("read", net.ErrClosed)
		case isClosed(c.rdl.wait()):
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		case len(p) == 0:
			return 0, nil
		}
		if n, ok, err := c.rx.pop(p); ok {
			return n, err
		}
		select {
		case <-c.rx.ready:
		case <-c.done:
		case <-c.rdl.wait():
		}
	}
}

// Write implements net.Conn. It never blocks: p is copied into the buffer.
func (c *memConn) Write(p []byte) (int, error) {
	switch {
	case isClosed(c.done):
		return 0, c.opError("write", net.ErrClosed)
	case isClosed(c.wdl.wait()):
		return 0, c.opError("write", os.ErrDeadlineExceeded)
	case isClosed(c.peerDone):
		return 0, c.opError("write", io.ErrClosedPipe)
	}
	c.tx.push(p)
	return len(p), nil
}

// Close implements net.Conn. It is idempotent and always returns nil. The
// peer reads what was written before Close, then io.EOF.
func (c *memConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.tx.closeWrite()
		c.rdl.stop()
		c.wdl.stop()
	})
	return nil
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline, SetReadDeadline and SetWriteDeadline implement net.Conn; the
// zero time means no deadline.

func (c *memConn) SetDeadline(t time.Time) error {
	if isClosed(c.done) {
		return c.opError("set", net.ErrClosed)
	}
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	if isClosed(c.done) {
		return c.opError("set", net.ErrClosed)
	}
	c.rdl.set(t)
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	if isClosed(c.done) {
		return c.opError("set", net.ErrClosed)
	}
	c.wdl.set(t)
	return nil
}
