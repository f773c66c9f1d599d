//go:build !linux

package compat

import "syscall"

// childProcAttr has nothing to add outside Linux; t.Cleanup kills brokers.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
