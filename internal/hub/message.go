package hub

import (
	"strconv"
	"strings"
)

// The message formats, shared with the Lua scripts that PUBLISH them. The
// package documentation describes what each one wakes.
const (
	msgOne   = "1"
	msgAll   = "*"
	prefixN  = "n:"
	prefixTo = "@"
	// prefixNotice starts a notice: what follows is for the Hub's notice
	// handler (see WithNotice), and every waiter of the channel wakes.
	prefixNotice = "!"
)

// One returns the message that wakes one waiter of the channel in each
// process: a mutex release, after which only one waiter can win.
func One() string { return msgOne }

// All returns the message that wakes every waiter of the channel: a reader
// release, a forced unlock, anything after which several waiters may win.
func All() string { return msgAll }

// N returns the message that wakes, in each process, as many waiters of the
// channel as fit in k permits (see Subscription.SetWeight): k permits are
// free. A k below 1 yields "n:0", which wakes no one.
func N(k int64) string {
	if k < 0 {
		k = 0
	}
	return prefixN + strconv.FormatInt(k, 10)
}

// To returns the message that delivers payload to the waiters subscribed with
// id and wakes only them. id must be non-empty and contain no space (Subscribe
// rejects such ids); payload may be empty or contain spaces.
func To(id, payload string) string {
	return prefixTo + id + " " + payload
}

// notice returns the body of a notice ("!BODY"); ok is false when payload
// is none.
func notice(payload string) (body string, ok bool) {
	return strings.CutPrefix(payload, prefixNotice)
}

// kind is what a parsed message asks the Hub to do.
type kind uint8

const (
	wakeAll kind = iota // wake every waiter
	wakeOne             // wake one waiter without a pending wake, whatever its weight
	wakeN               // wake waiters whose weights fit in n, those without a pending wake first
	wakeTo              // deliver payload to the waiters with id and wake them
)

type message struct {
	kind    kind
	n       int64
	id      string
	payload string
}

// parse decodes a published payload. Anything it does not recognise wakes
// everyone: a spurious wake costs one re-check, a lost one costs a poll
// interval.
func parse(s string) message {
	switch {
	case s == msgOne:
		return message{kind: wakeOne}
	case strings.HasPrefix(s, prefixN):
		digits := s[len(prefixN):]
		// ParseInt would accept a sign; the format is plain digits.
		if digits != "" && digits[0] >= '0' && digits[0] <= '9' {
			if n, err := strconv.ParseInt(digits, 10, 64); err == nil {
				return message{kind: wakeN, n: n}
			}
		}
	case strings.HasPrefix(s, prefixTo):
		id, payload, _ := strings.Cut(s[len(prefixTo):], " ")
		if id != "" {
			return message{kind: wakeTo, id: id, payload: payload}
		}
	}
	return message{kind: wakeAll}
}
