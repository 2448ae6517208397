package redcoord_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every Go snippet in README.md must stand, line for line, in an Example
// test, where it compiles and its output is checked.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var examples strings.Builder
	files, err := filepath.Glob("*/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Glob("example_test.go")
	for _, f := range append(files, root...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		examples.Write(b)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go snippet")
	}
	for i, b := range blocks {
		if !strings.Contains(examples.String(), b[1]) {
			t.Errorf("README Go snippet %d is not in any example_test.go:\n%s", i+1, b[1])
		}
	}
}
