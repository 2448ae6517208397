//go:build !linux

package redistest

import "os/exec"

// dieWithParent does nothing outside Linux, which alone has Pdeathsig: a
// test binary killed outright leaves its servers running there.
func dieWithParent(*exec.Cmd) {}
