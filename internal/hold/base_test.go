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
