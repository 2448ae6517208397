//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// detach puts the server the bench starts in a process group of its own,
// so that a Ctrl-C at the terminal stops the bench, which still releases
// its locks and deletes its keys on the server, and not the server under
// it. A bench killed outright leaves the server running.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
