package vfs

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// syncFSReportsErrors is whether the running kernel's syncfs(2) reports
// write-back errors (Linux 5.8, commit 735e4ae5ba28).
var syncFSReportsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	major, minor, ok := kernelVersion(unix.ByteSliceToString(u.Release[:]))
	return ok && (major > 5 || major == 5 && minor >= 8)
})

// kernelVersion parses the major and minor numbers of a kernel release
// such as "6.8.0-45-generic".
func kernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minorStr := parts[1]
	if i := strings.IndexFunc(minorStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorStr = minorStr[:i]
	}
	minor, err2 := strconv.Atoi(minorStr)
	return major, minor, err1 == nil && err2 == nil
}

func (osFS) CanSyncFS() bool { return syncFSReportsErrors() }

// SyncFS calls syncfs(2) on dir's descriptor.
func (osFS) SyncFS(dir File) error {
	f, ok := AsOSFile(dir)
	if !ok {
		return fmt.Errorf("syncfs %s: not an OS file", dir.Name())
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("syncfs %s: %w", dir.Name(), err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir.Name(), err)
	}
	if serr != nil {
		return fmt.Errorf("syncfs %s: %w", dir.Name(), serr)
	}
	return nil
}
