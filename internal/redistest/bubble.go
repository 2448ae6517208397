package redistest

import (
	"context"
	"errors"
	"net"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// bubbleAddr is the Addr of Bubble's options. It is never dialed (the Dialer
// ignores it) but must be an IP literal: see Bubble.
const bubbleAddr = "127.0.0.1:0"

// Bubble returns a miniredis that listens on no port, and client options
// whose Dialer connects to it in memory, for use inside a testing/synctest
// bubble. Each dial makes a buffered in-memory connection pair, hands one end
// to m's server (m.Server().ServeConn) and returns the other, so the whole
// client–server exchange stays inside the bubble; m's clock is the bubble's
// fake clock and ClockTTL is on, so a time.Sleep in the bubble expires keys
// and Lua's TIME follows it.
//
// The connections are not m.Dial()'s net.Pipe: a net.Pipe Write blocks until
// the peer reads, so a large pipeline stalls (the client is still writing
// commands while miniredis waits to write the first reply) until the write
// timeout fires. Here a Write never blocks, as on TCP with room in the kernel
// buffers; reads and deadlines wait on channels and timers of the bubble.
// The first dial starts m's listener-less server through one m.Dial(),
// closed at once, so m counts one extra connection received; a dial after
// m.Close() starts it again, as m.Dial() would.
//
// Bubble must be called inside the bubble, and the caller must close the
// client (and any PubSub) and then m before the bubble's function returns;
// after that no goroutine of theirs is left in the bubble. Pool settings keep
// go-redis's defaults: with MinIdleConns 0 the pool starts no goroutine of its
// own except short-lived dials, and PubSub.Channel's goroutines exit when the
// PubSub is closed.
//
// Two settings differ from go-redis's defaults, and a caller editing the
// options must keep them: Addr is an IP literal and MaintNotificationsConfig
// is disabled. With maintenance notifications in their default "auto" mode,
// NewClient resolves a host name in Addr (even "localhost") through the net
// package's resolver, whose process-wide semaphore is then created inside
// the first bubble that uses it; the next bubble to resolve crashes the test
// binary with "send on synctest channel from outside bubble". Disabling them
// also keeps the handshake at HELLO alone (miniredis rejects CLIENT
// MAINT_NOTIFICATIONS anyway). DisableIdentity is true as for [Server.Options].
func Bubble() (*miniredis.Miniredis, *redis.Options) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	opt := &redis.Options{
		Addr: bubbleAddr,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return dialBubble(m)
		},
		DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
	return m, opt
}

// dialBubble connects to m over a memConnPair, starting m's listener-less
// server first if it is not running.
func dialBubble(m *miniredis.Miniredis) (net.Conn, error) {
	srv := bubbleServer(m)
	if srv == nil {
		// Only m.Dial starts a server without a listener: let it, and drop
		// its net.Pipe (the server's goroutine for it sees EOF and exits).
		c, err := m.Dial()
		if err != nil {
			return nil, err
		}
		_ = c.Close()
		if srv = bubbleServer(m); srv == nil {
			return nil, errors.New("redistest: miniredis closed while dialing")
		}
	}
	client, serverEnd := memConnPair("bubble-client", "bubble-server")
	srv.ServeConn(serverEnd)
	return client, nil
}

// bubbleServer returns m's server, or nil if it is not running. m.Server()
// takes no lock of its own, so it is called under m's to keep the race
// detector quiet about concurrent dials and Close.
func bubbleServer(m *miniredis.Miniredis) *server.Server {
	m.Lock()
	defer m.Unlock()
	return m.Server()
}
