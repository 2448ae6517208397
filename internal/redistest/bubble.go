package redistest

import (
	"context"
	"net"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// bubbleAddr is the Addr of Bubble's options. It is never dialed (the Dialer
// ignores it) but must be an IP literal: see Bubble.
const bubbleAddr = "127.0.0.1:0"

// Bubble returns a miniredis that listens on no port, and client options
// whose Dialer calls m.Dial(), for use inside a testing/synctest bubble.
// Connections are net.Pipe pairs served by goroutines of the bubble, so the
// whole client–server exchange stays inside it; m's clock is the bubble's
// fake clock and ClockTTL is on, so a time.Sleep in the bubble expires keys
// and Lua's TIME follows it.
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
			return m.Dial()
		},
		DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
	return m, opt
}
