package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want message
	}{
		{One(), message{kind: wakeOne}},
		{All(), message{kind: wakeAll}},
		{N(3), message{kind: wakeN, n: 3}},
		{N(0), message{kind: wakeN, n: 0}},
		{N(-2), message{kind: wakeN, n: 0}},
		{"n:12", message{kind: wakeN, n: 12}},
		{To("owner:7", "granted 42"), message{kind: wakeTo, id: "owner:7", payload: "granted 42"}},
		{To("a", ""), message{kind: wakeTo, id: "a"}},
		{"@a", message{kind: wakeTo, id: "a"}},
		{"@a  two spaces ", message{kind: wakeTo, id: "a", payload: " two spaces "}},
		// Anything else wakes everyone.
		{"", message{kind: wakeAll}},
		{"released", message{kind: wakeAll}},
		{"2", message{kind: wakeAll}},
		{"n:", message{kind: wakeAll}},
		{"n:-1", message{kind: wakeAll}},
		{"n:+1", message{kind: wakeAll}},
		{"n:1x", message{kind: wakeAll}},
		{"n:99999999999999999999", message{kind: wakeAll}},
		{"@ payload", message{kind: wakeAll}},
		{"@", message{kind: wakeAll}},
	} {
		assert.Equal(t, c.want, parse(c.in), "%q", c.in)
	}
	assert.Equal(t, "1", One())
	assert.Equal(t, "*", All())
	assert.Equal(t, "n:5", N(5))
	assert.Equal(t, "@id the payload", To("id", "the payload"))
}
