package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

const (
	// startAttempts bounds how often Real retries with a new port when the
	// server exits before answering (another process took the port between
	// the probe and the server's bind).
	startAttempts = 3
	// startTimeout bounds the wait for one server to answer PING.
	startTimeout = 5 * time.Second
)

// Real starts a redis-server child process on a free 127.0.0.1 port and
// returns once it answers PING. The server runs in the foreground with no
// persistence (--save "" --appendonly no) and its own t.TempDir as --dir;
// args are appended to its command line, for example "--maxmemory-policy",
// "allkeys-lru".
//
// t.Cleanup kills the process and waits for it to exit. If redis-server is not
// on PATH, Real calls t.Skip, or t.Fatal when the environment sets CI. If the server does not answer PING within about
// five seconds, Real calls t.Fatal with the server's output, after killing and
// reaping the process: no server is left behind on any path.
func Real(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		const msg = "redistest: redis-server not found on PATH; install it (apt-get install redis-server) to run this test"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI is set: CI installs it, so nothing may skip)", msg)
		}
		t.Skip(msg)
	}
	var output string
	for attempt := 0; attempt < startAttempts; attempt++ {
		addr, out, ok := startReal(t, bin, args)
		if ok {
			return &Server{Addr: addr, Real: true}
		}
		output = out
	}
	t.Fatalf("redistest: redis-server did not answer PING after %d attempts; last output:\n%s", startAttempts, output)
	return nil
}

// startReal makes one attempt. On success the process is running and owned
// by a t.Cleanup. On failure the process has been killed and reaped, and the
// server's output is returned for the error message.
func startReal(t testing.TB, bin string, extra []string) (addr, output string, ok bool) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("redistest: find a free port: %v", err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "redis-server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("redistest: create log file: %v", err)
	}
	args := append([]string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", dir,
	}, extra...)
	cmd := exec.Command(bin, args...)
	// An *os.File as stdout/stderr makes exec hand the descriptor to the
	// child directly: no copying goroutine outlives the process.
	cmd.Stdout, cmd.Stderr = logFile, logFile
	err = cmd.Start()
	_ = logFile.Close() // the child holds its own descriptor
	if err != nil {
		t.Fatalf("redistest: start %s: %v", bin, err)
	}

	// exited is closed by the goroutine that reaps the process; the cleanup
	// and the failure path both wait on it.
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = cmd.Wait()
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if waitPing(addr, exited, startTimeout) {
		t.Cleanup(stop)
		return addr, "", true
	}
	stop()
	out, _ := os.ReadFile(logPath)
	return "", string(out), false
}

// freePort asks the kernel for a free TCP port on 127.0.0.1 and releases it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitPing polls addr with PING every 10ms until it answers +PONG, the
// process exits, or timeout passes.
func waitPing(addr string, exited <-chan struct{}, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if ping(addr) == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// ping sends one inline PING on a fresh connection and checks the reply.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("redistest: PING answered %q", line)
	}
	return nil
}
