package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing [off, off+n) of f back to disk and returns
// without waiting for it. The descriptor is held for the call (Control), so
// it cannot be closed and reused meanwhile. Errors are ignored: this is a
// hint, and a real failure shows at the next fsync.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
