package redcoord_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// readmeSnippets returns the bodies of README.md's ```go blocks.
func readmeSnippets(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		out = append(out, b[1])
	}
	if len(out) == 0 {
		t.Fatal("README.md has no Go snippet")
	}
	return out
}

// readmePrograms returns the programs under examples/ (each a main.go),
// keyed by their text.
func readmePrograms(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("examples/*/main.go")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[string(b)] = f
	}
	return out
}

// Every Go snippet in README.md must stand, line for line, in an Example
// test, where it compiles and its output is checked; or be, whole, a
// program under examples/, which TestReadmeProgramsRun builds and runs.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	var examples strings.Builder
	var files []string
	for _, pattern := range []string{"example*_test.go", "*/example*_test.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		examples.Write(b)
	}
	programs := readmePrograms(t)
	for i, b := range readmeSnippets(t) {
		if _, ok := programs[b]; ok {
			continue
		}
		if !strings.Contains(examples.String(), b) {
			t.Errorf("README Go snippet %d is neither in an example*_test.go nor a whole examples/*/main.go:\n%s", i+1, b)
		}
	}
}

// programOutput is what each program the README shows prints.
var programOutput = map[string]*regexp.Regexp{
	"examples/quickstart/main.go": regexp.MustCompile(`^holding orders:42, fencing token [1-9][0-9]*\nreleased\n$`),
}

// Every program the README shows runs: built with its server address
// ("localhost:6379", exactly once in its text) replaced by a test server's
// (a real redis-server when one is installed), it exits 0 and prints what
// programOutput says.
func TestReadmeProgramsRun(t *testing.T) {
	programs := readmePrograms(t)
	ran := 0
	for _, b := range readmeSnippets(t) {
		path, ok := programs[b]
		if !ok {
			continue
		}
		ran++
		t.Run(path, func(t *testing.T) {
			want, ok := programOutput[path]
			if !ok {
				t.Fatalf("%s: programOutput has no expected output for it", path)
			}
			if n := strings.Count(b, `"localhost:6379"`); n != 1 {
				t.Fatalf(`%s: "localhost:6379" appears %d times, want once`, path, n)
			}
			srv := testServer(t)
			dir := t.TempDir()
			src := filepath.Join(dir, "main.go")
			if err := os.WriteFile(src, []byte(strings.Replace(b, `"localhost:6379"`, `"`+srv.Addr+`"`, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				t.Fatal(err)
			}
			overlay, err := json.Marshal(map[string]map[string]string{"Replace": {abs: src}})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o600); err != nil {
				t.Fatal(err)
			}
			// Building takes seconds on a loaded machine; the program, milliseconds.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			bin := filepath.Join(dir, "program")
			build := exec.CommandContext(ctx, "go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "./"+filepath.Dir(path))
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build %s: %v\n%s", path, err, out)
			}
			var stderr strings.Builder
			run := exec.CommandContext(ctx, bin)
			run.Stderr = &stderr
			out, err := run.Output()
			if err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", path, err, out, stderr.String())
			}
			if !want.Match(out) {
				t.Errorf("%s printed:\n%s\nwant it to match %s", path, out, want)
			}
		})
	}
	if ran == 0 {
		t.Fatal("README.md shows no program from examples/")
	}
}

// testServer is a real server (redistest.Real) when one is installed (or CI
// is set), else an embedded miniredis.
func testServer(t *testing.T) *redistest.Server {
	t.Helper()
	if _, err := exec.LookPath(redistest.ServerName(t)); err != nil && os.Getenv("CI") == "" {
		return redistest.Mini(t)
	}
	return redistest.Real(t)
}

// The README opens with the two commands a newcomer runs: the bench, then
// the tests, the latter exactly as .ci/run runs them.
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
	if len(lines) < 2 {
		return
	}
	test, _, _ := strings.Cut(lines[1], "#")
	test = strings.TrimSpace(test)
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(ci), "\n"), test) {
		t.Errorf(".ci/run does not run the README's test command as a line of its own: %s", test)
	}
}
