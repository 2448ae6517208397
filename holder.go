package redcoord

import "time"

// Holder describes who holds a lock, for operators and logs.
type Holder struct {
	Owner      string        // owner id: "<client id>:<n>"
	Client     string        // the holder's client id
	Host       string        // the holder's host name
	PID        int           // the holder's process id
	AcquiredAt time.Time     // when the hold was taken, by the server's clock
	Lease      time.Duration // the lease the hold was taken with, or that Extend gave it last
	Fixed      bool          // true: a fixed lease (taken with one, or extended); false: renewed by the watchdog
	Remaining  time.Duration // what is left of the lease now
	Count      int64         // hold count (re-entries)
	Token      uint64        // fencing token of the hold
	Value      string        // what the holder's handle says it is (WithValue), "" if nothing
}
