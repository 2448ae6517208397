package main

import (
	"sort"
	"strings"
	"time"
)

// State is what the keys of one name say, as ls and inspect print it and
// as -json writes it. Times are the server's; durations are milliseconds
// from the server's clock at the read.
type State struct {
	Name    string   `json:"name"`
	Kinds   []string `json:"kinds"`   // the primitives whose keys the name has: "rlock", "rsemaphore", ...
	Holders []Holder `json:"holders"` // the hold, the readers, the leader, the permits held
	// Waiting counts the live waiters the keys know of: the fair queue's
	// requests, the waiting writers, and for the kinds that register a
	// Client rather than each of its waiters (rlock, the unfair
	// Semaphore, ExpirableSemaphore), the Clients registered.
	Waiting int    `json:"waiting"`
	Token   uint64 `json:"token"` // the last fencing token handed out (0: none kept)

	Queue          []Waiter       `json:"queue,omitempty"`           // fair queue, oldest first
	WaitingWriters []Waiter       `json:"waiting_writers,omitempty"` // rrwlock
	Registrations  []Registration `json:"registrations,omitempty"`   // Clients to wake
	Permits        *Permits       `json:"permits,omitempty"`
	Latch          *Latch         `json:"latch,omitempty"`
	Rate           *Rate          `json:"rate,omitempty"`
	Terms          []Term         `json:"terms,omitempty"` // relection's latest leaders, newest first
	Truncated      bool           `json:"truncated,omitempty"`
	Errors         []string       `json:"errors,omitempty"` // keys that could not be read
	ServerTime     time.Time      `json:"server_time"`

	fence string // the lock kinds' fence's last token as read ("": none), which force-unlock forces up to
}

// Holder is one hold of a name.
type Holder struct {
	Role        string     `json:"role"`  // holder, writer, reader, leader, permit
	Owner       string     `json:"owner"` // owner id "<client id>:<n>"; a permit's id
	Client      string     `json:"client,omitempty"`
	Host        string     `json:"host,omitempty"`
	PID         int        `json:"pid,omitempty"`
	Value       string     `json:"value,omitempty"` // WithValue; a leader's proclaimed value
	Count       int64      `json:"count,omitempty"` // hold count (re-entries)
	Token       uint64     `json:"token,omitempty"`
	AcquiredAt  *time.Time `json:"acquired_at,omitempty"`
	LeaseMS     int64      `json:"lease_ms,omitempty"` // the lease it was taken with
	Fixed       bool       `json:"fixed,omitempty"`    // a fixed lease: the watchdog does not renew it
	RemainingMS int64      `json:"remaining_ms"`       // what is left of the lease
}

// Waiter is one waiting request of a queue, or one waiting writer.
type Waiter struct {
	Request     string `json:"request,omitempty"` // "<owner>:<seq>"
	Owner       string `json:"owner"`
	Client      string `json:"client,omitempty"`
	Host        string `json:"host,omitempty"`
	PID         int    `json:"pid,omitempty"`
	Permits     int64  `json:"permits,omitempty"`  // what a semaphore's waiter asks for
	LeaseMS     int64  `json:"lease_ms,omitempty"` // the lease a grant would give
	HeartbeatMS int64  `json:"heartbeat_ms"`       // until the heartbeat deadline; <= 0: dead
	// JoinedAt is when the request joined a fair queue, and AgeMS how long
	// ago that was at the read. A request queued by a version that kept no
	// time, and a waiting writer, have neither.
	JoinedAt *time.Time `json:"joined_at,omitempty"`
	AgeMS    *int64     `json:"age_ms,omitempty"`
	// SeenMS is, in watch, for a waiter without AgeMS, how long watch has
	// seen it waiting: a lower bound of its age.
	SeenMS int64 `json:"seen_ms,omitempty"`
}

// Registration is one Client registered to be woken: its waiters wait in
// its own process, in a local queue.
type Registration struct {
	Key         string `json:"key"` // the registry: waiters, wwaiters, sem-waiters, xsem-waiters
	Client      string `json:"client"`
	HeartbeatMS int64  `json:"heartbeat_ms"`
	Smallest    int64  `json:"smallest,omitempty"` // sem-sizes: the fewest permits one of its waiters asks for
}

// Permits is a semaphore's configuration.
type Permits struct {
	Total     int64 `json:"total"`
	Available int64 `json:"available"` // Semaphore's counter; ExpirableSemaphore: total minus live leases
}

// Latch is a countdown latch.
type Latch struct {
	Count int64 `json:"count"` // -1: deleted
	Round int64 `json:"round"`
}

// Rate is a rate limiter's stored limit and state.
type Rate struct {
	Events   int64 `json:"events"`
	PeriodMS int64 `json:"period_ms"`
	Burst    int64 `json:"burst"`
	Set      bool  `json:"set"`                // SetLimit stored it
	AheadMS  int64 `json:"ahead_ms,omitempty"` // how far its TAT is ahead of now
}

// Term is one entry of an election's log.
type Term struct {
	Term  uint64    `json:"term"`
	Value string    `json:"value"`
	Since time.Time `json:"since"`
}

// addKind adds k to s.Kinds once.
func (s *State) addKind(k string) {
	for _, have := range s.Kinds {
		if have == k {
			return
		}
	}
	s.Kinds = append(s.Kinds, k)
	sort.Strings(s.Kinds)
}

// Kind returns the kinds as one word: "rlock", or "rlock+rsemaphore" for a
// name used by two.
func (s *State) Kind() string {
	if len(s.Kinds) == 0 {
		return "-"
	}
	return strings.Join(s.Kinds, "+")
}

// InUse reports whether anything holds the name or waits for it, or it
// keeps a configuration (permits, a latch, a limit).
func (s *State) InUse() bool {
	return len(s.Holders) > 0 || s.Waiting > 0 || len(s.Registrations) > 0 || s.Permits != nil ||
		s.Latch != nil || s.Rate != nil
}

// Soonest returns the least remaining lease of the holders, and false if
// there are none.
func (s *State) Soonest() (int64, bool) {
	if len(s.Holders) == 0 {
		return 0, false
	}
	m := s.Holders[0].RemainingMS
	for _, h := range s.Holders[1:] {
		m = min(m, h.RemainingMS)
	}
	return m, true
}

// owner returns the owner id of request id "<owner>:<seq>".
func ownerOf(req string) string {
	if i := strings.LastIndexByte(req, ':'); i > 0 {
		return req[:i]
	}
	return req
}

// clientOf returns the client id of owner id "<client id>:<n>".
func clientOf(owner string) string { return ownerOf(owner) }
