package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/redcoord/redcoord/internal/errs"
)

// Without WaitReplicas, Writer is the client itself and nothing is
// checked; with it, each Writer is its own. A shortfall after a take is
// an acquire undone; after a try that took nothing, no error; after a
// release, a release that stands.
func TestWriter(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})
	defer rdb.Close()
	s := &Session{RDB: rdb}
	assert.Same(t, rdb, s.Writer())
	ok, err := s.Confirm(t.Context(), nil) // no I/O: touch is not called
	assert.True(t, ok)
	assert.NoError(t, err)

	s.Config.Replicas = Replicas{N: 1, Timeout: time.Second}
	assert.NotSame(t, s.Writer(), s.Writer())
	short := fmt.Errorf("%w: 0 of 1 replicas acknowledged within 1s", errs.ErrNotReplicated)
	assert.ErrorIs(t, AcquireErr(true, short), errs.ErrNotAcquired)
	assert.ErrorIs(t, AcquireErr(true, short), errs.ErrNotReplicated)
	assert.NoError(t, AcquireErr(false, short))
	assert.Same(t, errs.ErrWrongType, AcquireErr(true, errs.ErrWrongType))
	assert.NotErrorIs(t, ReleaseErr(short), errs.ErrNotAcquired)
	assert.ErrorContains(t, ReleaseErr(short), "the release stands")
	assert.Same(t, errs.ErrWrongType, ReleaseErr(errs.ErrWrongType))
	assert.NoError(t, ReleaseErr(nil))
}
