package redistest

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Restartable is one redis-server child process that a test can pause,
// resume, kill and start again, always on the same 127.0.0.1 port and the
// same --dir: a client keeps its address across a crash, and a server
// started with "--appendonly", "yes" finds its data again after a restart.
// Its methods are safe for concurrent use; each calls t.Fatal when it cannot
// do what it says.
type Restartable struct {
	*Server        // Addr is the same for every process
	Dir     string // the servers' --dir, where AOF and RDB files live

	bin  string
	args []string // the whole command line, the same for every process
	port int      // the port args name
	log  string   // every process's output, appended

	mu     sync.Mutex // guards the fields below
	p      *proc      // the running process; nil once killed
	paused bool       // p was sent SIGSTOP and not SIGCONT since
}

// StartRestartable starts a redis-server as [Real] does (a free port, no
// persistence unless args say otherwise, args appended to the command
// line, a later option overriding an earlier one) and returns once it
// answers PING. t.Cleanup kills and reaps whichever process is running
// then, paused or not: none is left behind.
func StartRestartable(t testing.TB, args ...string) *Restartable {
	t.Helper()
	skipShort(t, "a redis-server to kill and restart")
	bin, f := serverBin(t)
	r := &Restartable{bin: bin}
	p := startProc(t, bin, f.server, func(dir string, port int) ([]string, error) {
		// The last attempt's line is the one that succeeded.
		r.Dir, r.args = dir, append(serverArgs(dir, port), args...)
		return r.args, nil
	})
	r.Server = &Server{Addr: p.addr, Real: true}
	r.port = p.port
	r.log = filepath.Join(r.Dir, logName)
	r.p = p
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.stopLocked()
	})
	return r
}

// Pause stops the server with SIGSTOP: its sockets stay open and accept
// bytes, but it reads, answers and expires nothing, until Resume. Keys
// whose TTL passes meanwhile are gone as soon as it runs again.
func (r *Restartable) Pause(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.signalLocked(t, syscall.SIGSTOP)
	r.paused = true
}

// Resume lets a paused server run again (SIGCONT); it is harmless on a
// server that is not paused.
func (r *Restartable) Resume(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.signalLocked(t, syscall.SIGCONT)
	r.paused = false
}

// Kill sends SIGKILL, as a crash would, and returns once the process has
// been reaped: the port refuses connections until Restart. Only what the
// server had written to its --dir survives. Killing a killed server is a
// no-op.
func (r *Restartable) Kill(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}

// Restart kills the running server, if any, and starts a new one with the
// same command line, port and directory, returning once it answers PING
// (after loading its AOF or RDB file, if any). It calls t.Fatal with the
// server's output if the new process does not answer within about five
// seconds (for example when another process took the port meanwhile);
// then no process is left running.
func (r *Restartable) Restart(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
	p, err := launch(r.bin, r.args, r.port, r.log)
	if err != nil {
		t.Fatalf("redistest: restart %s: %v", r.Addr, err)
	}
	if !waitPing(p.addr, p.exited, startTimeout) {
		p.kill()
		out, _ := os.ReadFile(r.log)
		t.Fatalf("redistest: restarted server at %s did not answer PING; its output:\n%s", r.Addr, out)
	}
	r.p = p
}

// signalLocked sends sig to the running process; the caller holds r.mu.
func (r *Restartable) signalLocked(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if r.p == nil {
		t.Fatalf("redistest: signal %v: the server at %s was killed (Restart it first)", sig, r.Addr)
	}
	if err := r.p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redistest: signal %v to the server at %s: %v", sig, r.Addr, err)
	}
}

// stopLocked resumes a paused process, so that nothing stays stopped
// whatever happens to the kill, then kills and reaps it; the caller holds
// r.mu.
func (r *Restartable) stopLocked() {
	if r.p == nil {
		return
	}
	if r.paused {
		_ = r.p.cmd.Process.Signal(syscall.SIGCONT)
		r.paused = false
	}
	r.p.kill()
	r.p = nil
}
