package storage

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/kbroker/kbroker/storage/vfs"
)

// deleteStepBytes is the most one call frees when the dir's background
// goroutine deletes a file (a retired segment, a "-delete" directory's
// files). On a file system mounted with `discard` the blocks are discarded
// inside the call that frees them (ext4 without a journal, as on the
// benchmark machine): one unlink of a 10 GB file took 2.4 s there and held
// a concurrent 200 MB/s writer of the same disk back 931 ms; truncating it
// 64 MiB at a time first took 2.5 s and held the writer back at most 13 ms
// (docs/PERFORMANCE.md "Deleting files in steps"). A variable so that
// tests can make it small.
var deleteStepBytes int64 = 64 << 20

// removeInSteps removes the file or directory tree at path, as RemoveAll,
// after truncating every regular file larger than step from its end, step
// bytes at a time, so that no single call frees more than step bytes. As
// RemoveAll it follows no symbolic link: a link (to a partition directory
// on another disk, say) is removed, what it points to left alone. A path
// already gone is not an error. For files no reader may still use: a
// reader of a file being truncated sees it end early (the dir deletes only
// after file.delete.delay.ms, as Kafka, which closes such files instead).
func removeInSteps(fs vfs.FS, path string, step int64) error {
	info, err := fs.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.IsDir() {
		entries, err := fs.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := removeInSteps(fs, filepath.Join(path, e.Name()), step); err != nil {
				return err
			}
		}
		return fs.RemoveAll(path)
	}
	if info.Mode().IsRegular() && info.Size() > step {
		shrinkInSteps(fs, path, info.Size(), step)
	}
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// shrinkInSteps truncates the file at path, size bytes long, to nothing,
// step bytes at a time. It stops at the first failure: the removal that
// follows frees the rest at once.
func shrinkInSteps(fs vfs.FS, path string, size, step int64) {
	f, err := fs.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	for size > 0 {
		size = max(size-step, 0)
		if f.Truncate(size) != nil {
			return
		}
	}
}
