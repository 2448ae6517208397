package redirect

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParse(t *testing.T) {
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
		addr, ask, again := Parse(c.err)
		assert.Equal(t, c.addr, addr, "%v", c.err)
		assert.Equal(t, c.ask, ask, "%v", c.err)
		assert.Equal(t, c.again, again, "%v", c.err)
	}
}
