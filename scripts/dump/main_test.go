package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redcoord/redcoord/internal/scripts"
)

func TestDump(t *testing.T) {
	dir := t.TempDir()
	var list strings.Builder
	if err := dump(dir, &list); err != nil {
		t.Fatal(err)
	}
	all := scripts.All()
	if n := strings.Count(list.String(), "\n"); n != len(all) {
		t.Errorf("%d lines listed, want %d", n, len(all))
	}
	for _, s := range all {
		b, err := os.ReadFile(filepath.Join(dir, s.Name()+".lua"))
		if err != nil || string(b) != s.Source() {
			t.Errorf("%s: not written as Redis runs it (%v)", s.Name(), err)
		}
	}
}
