package hold

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A re-entry keeps the id its acquire was given unless the handle made
// another since: then it takes a fresh one, numbered above that other
// request (a release of the hold sent first), so that a late copy of that
// release is numbered below the hold's last request.
func TestRenumber(t *testing.T) {
	b := &Base{Owner: "c:7"}
	req := b.NextRequest()
	assert.Equal(t, "c:7:1", req)
	assert.Equal(t, req, b.Renumber(req), "nothing made since: kept")

	release := b.NextRequest()
	assert.Equal(t, "c:7:2", release)
	assert.Equal(t, "c:7:3", b.Renumber(req), "a release numbered since: renumbered above it")
}

// An acquire's tries all send the id its first try sent: a re-entry's
// first try renumbers it if the handle numbered another request since, a
// fresh acquire's keeps it (its waiter is known by it).
func TestOpRequest(t *testing.T) {
	b := &Base{Owner: "c:7"}
	tr := New()
	reentry := tr.Op()
	req := b.NextRequest()
	assert.Equal(t, req, reentry.Sent(req), "nothing sent yet")
	b.NextRequest() // a release of the hold, sent first
	sent := reentry.Request(b, req, true)
	assert.Equal(t, "c:7:3", sent)
	b.NextRequest()
	assert.Equal(t, sent, reentry.Request(b, req, true), "a later try sends the same")
	assert.Equal(t, sent, reentry.Sent(req))

	fresh := tr.Op()
	req = b.NextRequest()
	b.NextRequest()
	assert.Equal(t, req, fresh.Request(b, req, false))
}
