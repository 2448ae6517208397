package main

import (
	"os/exec"
	"syscall"
)

// detach puts the server the bench starts in a process group of its own,
// so that a Ctrl-C at the terminal stops the bench, which still releases
// its locks and deletes its keys on the server, and not the server under
// it; and has the kernel kill the server if the bench dies without
// stopping it (Pdeathsig, sent when the thread that started the child
// exits: the bench locks no goroutine to a thread, so the runtime keeps
// that thread).
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
