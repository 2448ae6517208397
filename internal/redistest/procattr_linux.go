package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel SIGKILL the child when its parent dies, so
// that a test binary killed outright (a timeout, Ctrl-\, kill -9) leaves
// no redis-server behind. The parent, for Pdeathsig, is the thread that
// started the child, not the process: launch starts it from a goroutine
// locked to its thread until the child is reaped, so that thread outlives
// the child while the test binary runs.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
