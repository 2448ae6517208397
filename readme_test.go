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

// The README opens with the two commands a newcomer runs: the bench, then
// the tests, exactly as .ci/run runs them.
func TestReadmeStartsWithBenchAndTests(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	first := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(readme)
	if first == nil {
		t.Fatal("README.md has no sh block")
	}
	lines := strings.Split(strings.TrimSpace(string(first[1])), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "go run ./bench ") || !strings.HasPrefix(lines[1], "go test -race ./... ") {
		t.Errorf("the first sh block must start with `go run ./bench` then `go test -race ./...`; it is:\n%s", first[1])
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "go test -race ./...") {
		t.Error(".ci/run does not run the README's test command, go test -race ./...")
	}
}
