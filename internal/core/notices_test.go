package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type forcible struct{ upTo uint64 }

func (f *forcible) ForcedUpTo(token uint64) { f.upTo = max(f.upTo, token) }

// A notice that names a lock hold no hold of its owner has recorded yet is
// kept: a grant of that hold taken later is not trusted (Told), and its
// Add reports it forced; a later hold of the owner is not. Without a
// subscription that heard the Client's channel first, nothing is trusted.
func TestNoticeBeforeTheHoldIsRecorded(t *testing.T) {
	s := &Session{ID: "c1"}
	s.Config.Prefix = "rc"
	s.Config.Polling = true // no listener starts: Add only lists
	n := newNotices(s)
	assert.False(t, n.Told(nil, "c1:1", 5), "no subscription: ask Redis")

	n.Hear("l c1:1 5")
	n.Hear("l c1:2 9")
	f := &forcible{}
	assert.True(t, n.Add(Held{Owner: "c1:1"}, f, 5), "the hold of token 5 was forced before it was recorded")
	assert.False(t, n.Add(Held{Owner: "c1:1"}, f, 6), "the record is spent, and a later hold is not the one forced")
	assert.False(t, n.Add(Held{Owner: "c1:2"}, f, 10), "a later hold of another owner")
	n.Hear("r c1:3 4")
	assert.False(t, n.Add(Held{Owner: "c1:3"}, f, 4), "a read hold's notice is not a lock hold's")
	n.Hear("l c1:1 7")
	assert.Equal(t, uint64(7), f.upTo, "a listed hold is told at once")
}
