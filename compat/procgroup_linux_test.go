package compat

import (
	"os/exec"
	"syscall"
)

// groupProcAttr starts a client or toolchain process in its own process
// group (so killProcGroup ends its children too, such as the test binary
// `go test` runs) and has the kernel kill it if the test binary dies.
func groupProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcGroup kills cmd's whole process group.
func killProcGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
