package redistest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redcoord/redcoord/internal/loopback"
)

const (
	// startAttempts bounds how often startProc retries with a new port when
	// the server exits before answering (another process took the port
	// between the probe and the server's bind).
	startAttempts = 3
	// startTimeout bounds the wait for one server to answer PING.
	startTimeout = 5 * time.Second
	// logName is the file in a server's --dir that takes its output.
	logName = "server.log"
)

// proc is one server child process owned by a test. A t.Cleanup kills
// and reaps it; kill may also be called earlier, any number of times.
type proc struct {
	addr   string        // 127.0.0.1:port
	port   int           // the client port
	cmd    *exec.Cmd     // the started process
	exited chan struct{} // closed by the goroutine that reaps the process
}

// kill sends SIGKILL and returns once the process has been reaped.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill() // an error means it has exited already
	<-p.exited
}

// cmdline returns the arguments of one start attempt, given the attempt's own
// fresh directory and free port. Its error is reported with t.Fatal.
type cmdline func(dir string, port int) ([]string, error)

// serverArgs is the common part of every command line: the port, loopback
// only, no persistence, in the foreground, dir as the working directory.
func serverArgs(dir string, port int) []string {
	return []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", dir,
	}
}

// lookBin returns the path of the named binary, found on PATH. If it is
// missing it calls t.Skip naming the Debian package that installs it, or
// t.Fatal when the environment sets CI (CI installs it, so nothing may skip).
func lookBin(t testing.TB, name, pkg string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("redistest: %s not found on PATH; install it (apt-get install %s) to run this test", name, pkg)
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI is set: CI installs it, so nothing may skip)", msg)
		}
		t.Skip(msg)
	}
	return bin
}

// startProc starts bin with the arguments line returns and waits until it
// answers PING, trying up to startAttempts times with a new port and
// directory. The returned process is owned by a t.Cleanup. If no attempt
// succeeds, startProc calls t.Fatal with the last attempt's output, naming
// the server what; every process it started has been killed and reaped.
func startProc(t testing.TB, bin, what string, line cmdline) *proc {
	t.Helper()
	var output string
	for attempt := 0; attempt < startAttempts; attempt++ {
		p, out := startOnce(t, bin, line)
		if p != nil {
			return p
		}
		output = out
	}
	t.Fatalf("redistest: %s did not answer PING after %d attempts; last output:\n%s", what, startAttempts, output)
	return nil
}

// startOnce makes one attempt. On success the process is running and owned
// by a t.Cleanup. On failure it returns nil and the server's output, after
// killing and reaping the process.
func startOnce(t testing.TB, bin string, line cmdline) (*proc, string) {
	t.Helper()
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatalf("redistest: find a free port: %v", err)
	}
	dir := t.TempDir()
	args, err := line(dir, port)
	if err != nil {
		t.Fatalf("redistest: prepare %s: %v", bin, err)
	}
	logPath := filepath.Join(dir, logName)
	p, err := launch(bin, args, port, logPath)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if waitPing(p.addr, p.exited, startTimeout) {
		t.Cleanup(p.kill)
		return p, ""
	}
	p.kill()
	out, _ := os.ReadFile(logPath)
	return nil, string(out)
}

// launch starts bin with args, its output appended to logPath, and a
// goroutine that reaps it; port is the one args make it listen on. It does
// not wait for the server to answer. On error no process is running.
func launch(bin string, args []string, port int, logPath string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create log file: %w", err)
	}
	cmd := exec.Command(bin, args...)
	// An *os.File as stdout/stderr makes exec hand the descriptor to the
	// child directly: no copying goroutine outlives the process.
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithParent(cmd)
	p := &proc{
		addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		port:   port,
		cmd:    cmd,
		exited: make(chan struct{}),
	}
	// The goroutine that reaps the child also starts it, locked to its
	// thread all along: the thread that started the child (its parent for
	// dieWithParent) lives until the child is reaped, and only then exits
	// with the goroutine.
	started := make(chan error, 1)
	go func() {
		defer close(p.exited)
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			_ = cmd.Wait()
		}
	}()
	err = <-started
	_ = logFile.Close() // the child holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return p, nil
}

// waitPing polls addr with PING every 10ms until it answers +PONG, the
// process exits, or Patience(timeout) passes.
func waitPing(addr string, exited <-chan struct{}, timeout time.Duration) bool {
	deadline := time.Now().Add(Patience(timeout))
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if loopback.Ping(addr) == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
