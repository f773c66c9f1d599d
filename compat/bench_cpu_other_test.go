//go:build !linux

package compat

import "time"

// procCPU is not measured outside Linux.
func procCPU(int) (user, sys time.Duration, ok bool) { return 0, 0, false }

// selfCPU is not measured outside Linux.
func selfCPU() (time.Duration, bool) { return 0, false }

// benchSync does nothing outside Linux.
func benchSync() {}

// benchDiskFree is not measured outside Linux.
func benchDiskFree() uint64 { return 0 }
