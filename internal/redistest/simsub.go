package redistest

import (
	"fmt"
	"io"
	"os"
	"time"
)

// The subscriber side of [Net]: a subscriber connection's stream is cut
// into whole replies, and each pushed message may be dropped, duplicated or
// delayed; what follows a delayed message waits for it.

// readSub returns a subscriber's replies whole as they arrive, each message
// dropped, duplicated or delayed as the network decides, in order.
func (c *simConn) readSub(b []byte) (int, error) {
	tmp := make([]byte, 4096)
	for {
		c.mu.Lock()
		if len(c.segs) > 0 {
			s := &c.segs[0]
			if wait := time.Until(s.at); wait > 0 {
				c.mu.Unlock()
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-c.closed:
					t.Stop()
					return 0, io.EOF
				case <-c.deadline():
					t.Stop()
					return 0, fmt.Errorf("redistest: message delayed past the read deadline: %w", os.ErrDeadlineExceeded)
				}
				continue
			}
			n := copy(b, s.b)
			if s.b = s.b[n:]; len(s.b) == 0 {
				c.segs = c.segs[1:]
			}
			c.mu.Unlock()
			return n, nil
		}
		c.mu.Unlock()
		m, err := c.Conn.Read(tmp)
		c.mu.Lock()
		if c.broken {
			c.mu.Unlock()
			return 0, io.EOF
		}
		c.in = append(c.in, tmp[:m]...)
		for {
			l, perr := replyLen(c.in)
			if perr != nil {
				// Not RESP: pass on what came, as it came.
				c.segs = append(c.segs, segment{b: c.in, at: c.lastAt()})
				c.in = nil
				break
			}
			if l == 0 {
				break
			}
			c.push(c.in[:l:l])
			c.in = c.in[l:]
		}
		pending := len(c.segs) > 0
		c.mu.Unlock()
		if err != nil && !pending {
			return 0, err
		}
	}
}

// push queues one whole reply of a subscriber, faulting it if it is a
// message. c.mu is held.
func (c *simConn) push(reply []byte) {
	at := c.lastAt()
	switch pushKind(reply) {
	case "message", "smessage", "pmessage":
		f := c.n.decide(c.tag, true, "", "")
		switch f.Kind {
		case NetMsgDrop:
			return
		case NetMsgDup:
			c.segs = append(c.segs, segment{b: reply, at: at})
		case NetMsgDelay:
			at = time.Now().Add(f.D)
		}
	}
	c.segs = append(c.segs, segment{b: reply, at: at})
}

// lastAt is when the last queued reply arrives: nothing queued after it
// arrives before it. c.mu is held.
func (c *simConn) lastAt() time.Time {
	if len(c.segs) == 0 {
		return time.Time{}
	}
	return c.segs[len(c.segs)-1].at
}
