package franzsuite

import (
	"os/exec"
	"syscall"
)

// groupProcAttr starts the toolchain or the test binary in its own process
// group (so killProcGroup ends its children too) and has the kernel kill
// it if the calling test binary dies.
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
