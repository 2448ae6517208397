package core

import (
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/redcoord/redcoord/internal/scripts"
)

// Meta is what a hold stores about its holder, msgpack-encoded beside it, so
// an operator can ask who holds a name.
type Meta struct {
	Client string        `msgpack:"c"` // the holder's client id
	Host   string        `msgpack:"h"`
	PID    int           `msgpack:"p"`
	Lease  time.Duration `msgpack:"l"`           // the lease the hold was taken with, or that Extend gave it
	Fixed  bool          `msgpack:"f"`           // true: fixed lease; false: renewed by the watchdog
	Value  string        `msgpack:"v,omitempty"` // what the handle says it is (WithValue)
}

// EncodeMeta returns the msgpack encoding of the calling process's Meta,
// with the handle's value.
func (s *Session) EncodeMeta(lease time.Duration, fixed bool, value string) []byte {
	b, err := msgpack.Marshal(Meta{Client: s.ID, Host: s.host, PID: s.pid, Lease: lease, Fixed: fixed, Value: value})
	if err != nil { // a fixed struct of plain fields cannot fail to encode
		panic(err)
	}
	return b
}

// RenewedLease returns the lease argument of an acquire whose hold the
// watchdog renews, with the holder metadata of a handle of value value:
// for the common handle with none, one made once per Session and shared.
func (s *Session) RenewedLease(value string) *scripts.LeaseArg {
	if value == "" {
		return &s.renewed
	}
	l := scripts.NewLeaseArg(s.Config.TTL, s.EncodeMeta(s.Config.TTL, false, value))
	return &l
}

// DecodeMeta decodes what EncodeMeta wrote; unknown or empty input gives a zero Meta.
func DecodeMeta(b []byte) Meta {
	var m Meta
	_ = msgpack.Unmarshal(b, &m)
	return m
}
