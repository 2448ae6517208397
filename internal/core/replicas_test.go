package core

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/redcoord/redcoord/internal/errs"
)

func TestRedirect(t *testing.T) {
	for _, c := range []struct {
		err        error
		addr       string
		ask, again bool
	}{
		{nil, "", false, false},
		{errors.New("MOVED 3999 127.0.0.1:6381"), "127.0.0.1:6381", false, false},
		{errors.New("ASK 3999 127.0.0.1:6381"), "127.0.0.1:6381", true, false},
		{errors.New("TRYAGAIN Multiple keys request during rehashing of slot"), "", false, true},
		{errors.New("NOSCRIPT No matching script"), "", false, false},
		{errors.New("ERR MOVED 3999 127.0.0.1:6381"), "", false, false},
	} {
		addr, ask, again := redirect(c.err)
		assert.Equal(t, c.addr, addr, "%v", c.err)
		assert.Equal(t, c.ask, ask, "%v", c.err)
		assert.Equal(t, c.again, again, "%v", c.err)
	}
}

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
