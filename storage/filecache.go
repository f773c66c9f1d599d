package storage

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/kbroker/kbroker/storage/vfs"
)

// DefaultSegmentOpenFilesMax is the default of log.segment.open.files.max
// (a kbroker setting; Kafka keeps every segment open): how many ".log"
// files of inactive segments a log dir keeps open at once. The active
// segment of every partition is open besides these, as far as the
// process's descriptor limit allows (pinAllowed); the rest are cached
// like inactive ones.
const DefaultSegmentOpenFilesMax = 1000

// ErrTooManyOpenFiles reports that the process ran out of file descriptors
// (EMFILE or ENFILE) while opening a log file.
var ErrTooManyOpenFiles = errors.New("too many open files: raise the descriptor limit (ulimit -n) or lower log.segment.open.files.max")

// fileCache bounds the descriptors held by the ".log" files of inactive
// segments, as pebble's table cache does: such a file is opened when read
// and its descriptor kept, least recently used first out, while more than
// max are idle. A file in use (a read or write in progress, or pinned: an
// active segment, whose descriptor stays open while pinAllowed) is never
// closed under its user; if every cached descriptor is in use the cache
// goes over max rather than fail. An active segment that could not be
// pinned is cached like an inactive one: closing its descriptor loses
// nothing (its written pages stay in the page cache, and fsync through a
// later descriptor flushes the inode).
type fileCache struct {
	fs  vfs.FS
	max int

	mu sync.Mutex
	// idle holds the *segFile with an open descriptor and no user, most
	// recently used first.
	idle list.List
	// open counts the descriptors the cache holds.
	open int
}

// newFileCache returns a cache of at most max idle descriptors on fs
// (DefaultSegmentOpenFilesMax if max <= 0).
func newFileCache(fs vfs.FS, max int) *fileCache {
	if max <= 0 {
		max = DefaultSegmentOpenFilesMax
	}
	return &fileCache{fs: fs, max: max}
}

// OpenCount is the number of descriptors held, for tests and metrics.
func (c *fileCache) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// segFile is a ".log" file whose descriptor the cache opens on demand.
// Invariant (under c.mu): f != nil iff the cache counts a descriptor for
// it; elem != nil iff f != nil, refs == 0 and not closed.
type segFile struct {
	c    *fileCache
	path string

	// Guarded by c.mu.
	f      vfs.File
	refs   int
	elem   *list.Element
	closed bool
}

// file registers path with the cache. f, if not nil, is its open
// descriptor, handed to the cache (idle).
func (c *fileCache) file(path string, f vfs.File) *segFile {
	sf := &segFile{c: c, path: path}
	if f != nil {
		c.mu.Lock()
		sf.f = f
		c.open++
		sf.elem = c.idle.PushFront(sf)
		c.trimLocked()
		c.mu.Unlock()
	}
	return sf
}

// trimLocked closes idle descriptors, oldest first, while more than max
// are idle. Descriptors in use (pinned active segments, reads in progress)
// do not count: they are bounded by the partitions and the readers.
func (c *fileCache) trimLocked() {
	for c.idle.Len() > c.max {
		c.evictLocked(c.idle.Back().Value.(*segFile))
	}
}

// evictLocked closes the idle descriptor of sf.
func (c *fileCache) evictLocked(sf *segFile) {
	c.idle.Remove(sf.elem)
	sf.elem = nil
	_ = sf.f.Close() // no user: dirty pages stay with the inode for the owner's next fsync
	sf.f = nil
	c.open--
}

// acquire returns the open descriptor, opening it if needed, and counts a
// user; release must follow.
func (sf *segFile) acquire() (vfs.File, error) {
	c := sf.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if sf.closed {
		return nil, &os.PathError{Op: "open", Path: sf.path, Err: os.ErrClosed}
	}
	if sf.f == nil {
		f, err := c.fs.OpenFile(sf.path, os.O_RDWR, 0)
		if err != nil && isFDExhausted(err) && c.idle.Len() > 0 {
			for c.idle.Len() > 0 {
				c.evictLocked(c.idle.Back().Value.(*segFile))
			}
			f, err = c.fs.OpenFile(sf.path, os.O_RDWR, 0)
		}
		if err != nil {
			return nil, wrapOpenErr(err)
		}
		sf.f = f
		c.open++
	} else if sf.elem != nil {
		c.idle.Remove(sf.elem)
		sf.elem = nil
	}
	sf.refs++
	return sf.f, nil
}

// release ends a use begun by acquire.
func (sf *segFile) release() {
	c := sf.c
	c.mu.Lock()
	defer c.mu.Unlock()
	sf.refs--
	if sf.refs > 0 || sf.f == nil {
		return
	}
	if sf.closed {
		_ = sf.f.Close()
		sf.f = nil
		c.open--
		return
	}
	sf.elem = c.idle.PushFront(sf)
	c.trimLocked()
}

// close forgets the file: its descriptor is closed now, or by the last
// user's release. Later acquires fail with os.ErrClosed.
func (sf *segFile) close() error {
	c := sf.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if sf.closed {
		return nil
	}
	sf.closed = true
	if sf.f == nil || sf.refs > 0 {
		return nil
	}
	if sf.elem != nil {
		c.idle.Remove(sf.elem)
		sf.elem = nil
	}
	err := sf.f.Close()
	sf.f = nil
	c.open--
	return err
}

// Name is the file's path.
func (sf *segFile) Name() string { return sf.path }

// ReadAt reads through a cached descriptor.
func (sf *segFile) ReadAt(b []byte, off int64) (int, error) {
	f, err := sf.acquire()
	if err != nil {
		return 0, err
	}
	defer sf.release()
	return f.ReadAt(b, off)
}

// WriteAt writes through a cached descriptor.
func (sf *segFile) WriteAt(b []byte, off int64) (int, error) {
	f, err := sf.acquire()
	if err != nil {
		return 0, err
	}
	defer sf.release()
	return f.WriteAt(b, off)
}

// Truncate truncates through a cached descriptor.
func (sf *segFile) Truncate(size int64) error {
	f, err := sf.acquire()
	if err != nil {
		return err
	}
	defer sf.release()
	return f.Truncate(size)
}

// Sync fsyncs through a cached descriptor.
func (sf *segFile) Sync() error {
	f, err := sf.acquire()
	if err != nil {
		return err
	}
	defer sf.release()
	return f.Sync()
}

// openFile opens a file outside the cache (a new segment, an index) on
// the cache's FS; if the process is out of descriptors it closes the idle
// ones and tries once more.
func (c *fileCache) openFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.fs.OpenFile(name, flag, perm)
	if err != nil && isFDExhausted(err) && c.evictIdle() {
		f, err = c.fs.OpenFile(name, flag, perm)
	}
	if err != nil {
		return nil, wrapOpenErr(err)
	}
	return f, nil
}

// evictIdle closes every idle descriptor and reports whether there was one.
func (c *fileCache) evictIdle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.idle.Len()
	for c.idle.Len() > 0 {
		c.evictLocked(c.idle.Back().Value.(*segFile))
	}
	return n > 0
}

// pinnedFiles counts the descriptors held open by segments of every log
// in the process (the active ones, and rolled ones until their fsync).
var pinnedFiles atomic.Int64

// descriptorReserve is the share of RLIMIT_NOFILE (at least
// minDescriptorReserve) that pinning leaves to everything else:
// connections, checkpoint writes, index files read at start-up.
const (
	descriptorReserveDivisor = 20
	minDescriptorReserve     = 64
)

// pinAllowed reports whether one more segment may keep its descriptor
// open: the pinned segments of all partitions, plus cacheMax for the
// segment cache, plus the reserve, stay within the process's descriptor
// limit. Past it a segment is not pinned but opened on demand through the
// cache, as an inactive one is, so a broker holds more partitions than
// its descriptor limit (one descriptor each, as Kafka would need) at the
// cost of an open(2) when a cold partition is written.
func pinAllowed(cacheMax int) bool {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > math.MaxInt32 {
		return true
	}
	limit := int64(lim.Cur)
	reserve := max(limit/descriptorReserveDivisor, minDescriptorReserve)
	return pinnedFiles.Load()+1+int64(cacheMax)+reserve <= limit
}

// isFDExhausted reports whether err is EMFILE or ENFILE.
func isFDExhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// wrapOpenErr gives descriptor exhaustion a clear error (ErrTooManyOpenFiles)
// that still matches the errno.
func wrapOpenErr(err error) error {
	if isFDExhausted(err) && !errors.Is(err, ErrTooManyOpenFiles) {
		return fmt.Errorf("%w: %w", ErrTooManyOpenFiles, err)
	}
	return err
}
