package rrwlock

import "github.com/redis/go-redis/v9"

// ReadRenewal returns the watchdog's renewal of m's current read hold as
// the watchdog sends it, the hold's name last, so that a test can deliver
// it late.
func ReadRenewal(m *RWMutex) (*redis.Script, []string, []any) {
	script, keys, args := m.rw.Renewal(false, m.h.TTL())
	return script, keys, append(args, m.read.ReleaseArg())
}
