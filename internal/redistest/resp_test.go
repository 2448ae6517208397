package redistest

import (
	"reflect"
	"testing"
)

func TestRESPParser(t *testing.T) {
	set := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\r\nbc\r\n" // value contains CRLF
	get := "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	wantSet := []string{"SET", "k", "a\r\nbc"}
	wantGet := []string{"GET", "k"}

	t.Run("byte by byte", func(t *testing.T) {
		var p respParser
		var got [][]string
		for i := range len(set) {
			got = append(got, p.feed([]byte{set[i]})...)
		}
		if !reflect.DeepEqual(got, [][]string{wantSet}) {
			t.Fatalf("got %q, want %q", got, wantSet)
		}
	})
	t.Run("pipeline in one write", func(t *testing.T) {
		var p respParser
		got := p.feed([]byte(set + get + set[:7]))
		if !reflect.DeepEqual(got, [][]string{wantSet, wantGet}) {
			t.Fatalf("got %q", got)
		}
		got = p.feed([]byte(set[7:]))
		if !reflect.DeepEqual(got, [][]string{wantSet}) {
			t.Fatalf("rest: got %q", got)
		}
	})
	t.Run("malformed stops recognition", func(t *testing.T) {
		var p respParser
		if got := p.feed([]byte("PING\r\n")); got != nil {
			t.Fatalf("inline command parsed as %q", got)
		}
		if got := p.feed([]byte(get)); got != nil {
			t.Fatalf("after malformed input got %q, want nothing", got)
		}
	})
}
