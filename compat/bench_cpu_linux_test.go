package compat

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clkTck is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on
// every Linux architecture Go supports).
const clkTck = 100

// procCPU is the user and the system CPU time a process has used so far,
// from /proc/<pid>/stat; ok is false if they cannot be read.
func procCPU(pid int) (user, sys time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis: utime and stime are the 14th
	// and 15th fields of the line, the 12th and 13th after the name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return time.Duration(ut) * time.Second / clkTck, time.Duration(st) * time.Second / clkTck, true
}

// selfCPU is the user plus system CPU time of this test process so far.
func selfCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// benchSync writes every dirty page of the machine back (sync(2)).
func benchSync() { syscall.Sync() }

// benchDiskFree is the space free to users on the file system that holds
// the targets' data directories (under os.TempDir()), 0 if unknown.
func benchDiskFree() uint64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &st); err != nil {
		return 0
	}
	return st.Bavail * uint64(st.Bsize)
}
