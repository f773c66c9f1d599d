// Package vfs is the file-system boundary of storage: every file the
// storage package reads or writes goes through an [FS], so that tests can
// swap the real files for an in-memory file system that simulates a crash
// ([NewMem], [MemFS.CrashClone]) or for a wrapper that injects errors
// ([WithErrors]). Production uses [Default], the operating system's files.
//
// The interface is the small subset storage needs; its semantics are those
// of POSIX files on Linux: a rename or a creation is durable only once its
// directory was fsynced ([SyncDir]), and written bytes only once the file
// was fsynced.
package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is an open file. Reads and writes at explicit offsets are safe for
// concurrent use; Read and Write use and move a shared position.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	// Sync makes the file's written bytes durable (fsync). On a directory
	// opened with FS.OpenDir it makes its entries durable.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Stat describes the file.
	Stat() (os.FileInfo, error)
	// Name is the path the file was opened with.
	Name() string
}

// OSFile is implemented by files backed by an *os.File, so that callers
// that need the descriptor (sendfile, flock) can reach it. See [AsOSFile].
type OSFile interface {
	OSFile() *os.File
}

// AsOSFile returns the *os.File behind f, if there is one.
func AsOSFile(f File) (*os.File, bool) {
	switch f := f.(type) {
	case *os.File:
		return f, true
	case OSFile:
		return f.OSFile(), f.OSFile() != nil
	}
	return nil, false
}

// FS is a file system. Paths are OS paths (filepath.Join, filepath.Dir);
// errors satisfy errors.Is(err, fs.ErrNotExist) and the like as os errors do.
type FS interface {
	// OpenFile opens name with os.O_* flags, as os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// OpenDir opens a directory so that its entries can be synced.
	OpenDir(name string) (File, error)
	// Rename replaces newname with oldname atomically.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes name and everything under it; a missing name is
	// not an error.
	RemoveAll(name string) error
	// MkdirAll creates a directory and its missing parents.
	MkdirAll(name string, perm os.FileMode) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]os.DirEntry, error)
	// Stat describes name.
	Stat(name string) (os.FileInfo, error)
	// Lstat describes name without following a symbolic link.
	Lstat(name string) (os.FileInfo, error)
	// Lock takes an exclusive lock on the file name (creating it) that
	// excludes other processes and other Lock calls until the returned
	// Closer is closed. It fails at once if the lock is held.
	Lock(name string) (io.Closer, error)
}

// ErrLocked reports that Lock found the lock held.
var ErrLocked = errors.New("lock held by another process")

// Open opens name read-only.
func Open(fs FS, name string) (File, error) { return fs.OpenFile(name, os.O_RDONLY, 0) }

// Create creates or truncates name for reading and writing.
func Create(fs FS, name string) (File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// ReadFile reads the whole file name.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := Open(fs, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// SyncDir fsyncs the directory dir so that creations, renames and removals
// of its entries are durable.
func SyncDir(fs FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// WriteFileSynced creates (or truncates) name, writes data and fsyncs it.
// The directory entry is not synced.
func WriteFileSynced(fs FS, name string, data []byte, perm os.FileMode) error {
	return writeFile(fs, name, data, perm, true)
}

// WriteFile creates (or truncates) name and writes data, fsyncing
// nothing.
func WriteFile(fs FS, name string, data []byte, perm os.FileMode) error {
	return writeFile(fs, name, data, perm, false)
}

func writeFile(fs FS, name string, data []byte, perm os.FileMode, fsync bool) error {
	f, err := fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && fsync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic replaces name with data so that a crash leaves either the
// old or the new contents: a temporary file "<name>.tmp" is written and
// fsynced, renamed over name, and the directory is fsynced.
func WriteFileAtomic(fs FS, name string, data []byte, perm os.FileMode) error {
	tmp := name + ".tmp"
	err := WriteFileSynced(fs, tmp, data, perm)
	if err == nil {
		err = fs.Rename(tmp, name)
	}
	if err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return SyncDir(fs, filepath.Dir(name))
}
