package core

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/redcoord/redcoord/internal/errs"
)

// Without WaitReplicas, Writer is the client itself and nothing is
// checked; with it, each Writer is its own.
func TestWriter(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})
	defer rdb.Close()
	s := &Session{RDB: rdb}
	assert.Same(t, rdb, s.Writer())
	assert.NoError(t, Acked(s.Writer()))
	ok, err := s.Confirm(t.Context(), nil) // no I/O: touch is not called
	assert.True(t, ok)
	assert.NoError(t, err)

	s.Config.Replicas = Replicas{N: 1, Timeout: time.Second}
	w := s.Writer()
	assert.NotSame(t, w, s.Writer())
	w.(*acked).short = errs.ErrNotReplicated
	assert.ErrorIs(t, AckedAcquire(w), errs.ErrNotAcquired)
	assert.ErrorIs(t, AckedAcquire(w), errs.ErrNotReplicated)
	assert.NotErrorIs(t, AckedRelease(w), errs.ErrNotAcquired)
	assert.ErrorContains(t, AckedRelease(w), "the release stands")
}
