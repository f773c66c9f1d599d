package compat

import "syscall"

// childProcAttr makes the kernel kill a broker process when the test binary
// dies (for example on a `go test -timeout` panic, which skips t.Cleanup), so
// no broker outlives its test run.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
