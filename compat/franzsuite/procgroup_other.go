//go:build !linux

package franzsuite

import (
	"os/exec"
	"syscall"
)

// GroupProcAttr has nothing to add outside Linux.
func GroupProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// KillProcGroup kills the process itself outside Linux.
func KillProcGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
