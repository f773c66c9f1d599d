package vfs

import "errors"

// FSSyncer is an FS that can make everything written to the file system
// holding a directory durable at once, as Linux's syncfs(2): one call
// instead of an fsync of every file and directory written. A log dir's
// Close uses it to close thousands of logs without an fsync each.
type FSSyncer interface {
	FS
	// CanSyncFS reports whether SyncFS works here: on the OS, Linux 5.8
	// or later, the first to report write-back errors to syncfs.
	CanSyncFS() bool
	// SyncFS makes durable the written bytes of every file and the
	// entries of every directory on the file system of dir, a directory
	// opened with OpenDir. It fails if writing anything on that file
	// system back failed since dir was opened (or since a SyncFS through
	// dir reported the failure), whoever wrote it: a caller that opened
	// dir before writing learns of every failure of its own writes.
	SyncFS(dir File) error
}

// CanSyncFS reports whether fs is an FSSyncer whose SyncFS works.
func CanSyncFS(fs FS) bool {
	s, ok := fs.(FSSyncer)
	return ok && s.CanSyncFS()
}

// SyncFS is fs's SyncFS(dir), or an error wrapping errors.ErrUnsupported
// if fs cannot (see CanSyncFS).
func SyncFS(fs FS, dir File) error {
	if !CanSyncFS(fs) {
		return errors.ErrUnsupported
	}
	return fs.(FSSyncer).SyncFS(dir)
}
