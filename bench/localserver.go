package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redcoord/redcoord/internal/loopback"
)

// setStart checks -start (given says whether it was) and resolves auto:
// redis-server when it is on PATH, else miniredis. With -redis or
// -cluster the bench starts nothing, and start is "".
func (c *config) setStart(given bool) error {
	switch c.start {
	case "auto", "redis-server", "miniredis":
	default:
		return fmt.Errorf("-start %q: want redis-server, miniredis or auto", c.start)
	}
	if c.redis != "" || c.cluster != nil {
		if given {
			return errors.New("-start: the bench starts a server only without -redis and -cluster")
		}
		c.start = ""
		return nil
	}
	if c.start == "auto" {
		c.start = "redis-server"
		if _, err := exec.LookPath("redis-server"); err != nil {
			c.start, c.fallback = "miniredis", true
		}
	}
	return nil
}

// localServer is a redis-server child process the bench started for its
// run: on a free loopback port, in the foreground, with no persistence,
// in a temporary folder of its own. stop kills it and removes the folder.
type localServer struct {
	bin    string        // the redis-server started
	addr   string        // 127.0.0.1:port
	dir    string        // its working folder, with its log
	cmd    *exec.Cmd     // the started process
	exited chan struct{} // closed by the goroutine that reaps the process
}

const (
	// startAttempts bounds how often startRedisServer tries a new port when
	// the server exits before answering (another process took the port
	// between the probe and the server's bind).
	startAttempts = 3
	// startTimeout bounds the wait for one server to answer PING.
	startTimeout = 5 * time.Second
)

// startRedisServer starts the redis-server at bin and returns once it
// answers PING, trying up to startAttempts ports. On error no process is
// left running and no folder is left behind; the error carries the last
// attempt's output.
func startRedisServer(ctx context.Context, bin string) (*localServer, error) {
	var err error
	for range startAttempts {
		var s *localServer
		if s, err = startOnce(ctx, bin); err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}

// startOnce makes one attempt of startRedisServer.
func startOnce(ctx context.Context, bin string) (*localServer, error) {
	port, err := loopback.FreePort()
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "rcbench-redis-*")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "redis-server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", dir)
	// An *os.File as stdout and stderr is handed to the child as is: no
	// copying goroutine outlives it.
	cmd.Stdout, cmd.Stderr = logFile, logFile
	detach(cmd)
	err = cmd.Start()
	logFile.Close() // the child holds its own descriptor
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &localServer{
		bin: bin, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir: dir, cmd: cmd, exited: make(chan struct{}),
	}
	go func() {
		defer close(s.exited)
		_ = cmd.Wait()
	}()
	if s.waitPing(ctx) {
		return s, nil
	}
	out, _ := os.ReadFile(logPath)
	s.stop()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("%s did not answer on %s within %v; its output:\n%s", bin, s.addr, startTimeout, out)
}

// stop kills the server, waits for it to exit and removes its folder.
func (s *localServer) stop() {
	_ = s.cmd.Process.Kill() // an error means it has exited already
	<-s.exited
	os.RemoveAll(s.dir)
}

// waitPing polls the server with PING every 10ms until it answers, exits,
// startTimeout passes or ctx is done.
func (s *localServer) waitPing(ctx context.Context) bool {
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	for {
		if loopback.Ping(s.addr) == nil {
			return true
		}
		select {
		case <-s.exited:
			return false
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}
