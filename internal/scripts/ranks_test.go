package scripts

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// tokenRanks replaces a case's tokens by their ranks, so that tables can
// name tokens although their values come from the server's clock: 1 is the
// first token the case sees, 2 the next new one, and 0 stays 0 (no token).
// A token seen for the first time must be above every token seen before.
type tokenRanks struct{ seen []uint64 }

// rank returns tok's rank, adding it when it is new.
func (r *tokenRanks) rank(t *testing.T, tok uint64) uint64 {
	t.Helper()
	if tok == 0 {
		return 0
	}
	for i, s := range r.seen {
		if s == tok {
			return uint64(i + 1)
		}
	}
	if n := len(r.seen); n > 0 {
		assert.Greater(t, tok, r.seen[n-1], "a new token is above every earlier one")
	}
	r.seen = append(r.seen, tok)
	return uint64(len(r.seen))
}

// of returns a script's reply with its token replaced by the token's rank.
func (r *tokenRanks) of(t *testing.T, reply any) any {
	t.Helper()
	switch v := reply.(type) {
	case Acquired:
		v.Token = r.rank(t, v.Token)
		return v
	case XAttempt:
		v.Token = r.rank(t, v.Token)
		return v
	}
	return reply
}
