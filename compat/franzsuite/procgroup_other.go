//go:build !linux

package franzsuite

import (
	"os/exec"
	"syscall"
)

// groupProcAttr has nothing to add outside Linux.
func groupProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// killProcGroup kills the process itself outside Linux.
func killProcGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
