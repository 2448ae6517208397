package hold

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
)

// A hold whose force's notice the Client heard before the hold was
// recorded (a grant taken as it came, forced on its way) is not reported
// held: Took fails with ErrNotAcquired and ErrLeaseLost, Lost is closed,
// and the handle holds nothing. A later hold of the owner is recorded.
func TestTookAfterTheForcesNotice(t *testing.T) {
	s, err := core.New(nil, core.Config{TTL: time.Second, Prefix: "rc", Polling: true, Logger: slog.Default()})
	require.NoError(t, err)
	n := s.Notices
	tr := New()
	tr.Heed(n, core.Held{Owner: "c:1"})

	n.Hear("l c:1 5")
	err = tr.Took(Belief{}, 5, 1, Upkeep{})
	require.ErrorIs(t, err, errs.ErrNotAcquired)
	require.ErrorIs(t, err, errs.ErrLeaseLost)
	assert.True(t, Closed(tr.Lost()))
	assert.Zero(t, tr.Count())

	require.NoError(t, tr.Took(Belief{}, 6, 1, Upkeep{}))
	assert.Equal(t, int64(1), tr.Count())
	assert.False(t, Closed(tr.Lost()))
}
