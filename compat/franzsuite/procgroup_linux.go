package franzsuite

import (
	"os/exec"
	"syscall"
)

// GroupProcAttr starts a child (the toolchain, a test binary, a client) in
// its own process group (so KillProcGroup ends its children too) and has
// the kernel kill it if the calling test binary dies.
func GroupProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// KillProcGroup kills cmd's whole process group.
func KillProcGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
