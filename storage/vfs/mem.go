package vfs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that can simulate a crash: [MemFS.CrashClone]
// returns the file system a machine would find after losing power at that
// moment. It keeps only what was made durable:
//   - a file's bytes as of its last File.Sync (none if never synced);
//   - a directory's entries (creations, renames, removals) as of its last
//     sync through OpenDir + Sync.
//
// Like Linux, an open file whose name was removed stays readable and
// writable through its handle. The root directory always exists. All
// methods are safe for concurrent use.
type MemFS struct {
	mu    sync.Mutex
	root  *memNode
	locks map[string]bool
	now   func() time.Time
	// syncHook, if set, runs after every successful file or directory sync.
	syncHook func(path string)
}

// memNode is a file or directory ("inode"); guarded by MemFS.mu.
type memNode struct {
	dir     bool
	data    []byte // file contents now
	synced  []byte // file contents as of the last Sync
	modTime time.Time
	// children are a directory's entries now; durable are its entries as of
	// its last sync.
	children map[string]*memNode
	durable  map[string]*memNode
}

// NewMem returns an empty in-memory file system.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode(), locks: map[string]bool{}, now: time.Now}
}

func newDirNode() *memNode {
	return &memNode{dir: true, children: map[string]*memNode{}, durable: map[string]*memNode{}, modTime: time.Now()}
}

// SetSyncHook installs f to run after every successful sync of a file or a
// directory, with its path, on the goroutine that synced; nil removes it.
// A crash test takes a CrashClone there to visit every durable state.
func (m *MemFS) SetSyncHook(f func(path string)) {
	m.mu.Lock()
	m.syncHook = f
	m.mu.Unlock()
}

// CrashOptions tune CrashClone.
type CrashOptions struct {
	// Rand, if set, keeps a random prefix of the bytes written after a
	// file's last sync (when they extend the synced bytes), as a disk that
	// wrote back part of its page cache before power was lost. Nil keeps
	// none of them.
	Rand *rand.Rand
}

// CrashClone returns a new MemFS holding only what was durable in m: see
// MemFS. m is unchanged and stays usable.
func (m *MemFS) CrashClone(opts CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*memNode]*memNode{}
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c, ok := seen[n]; ok {
			return c
		}
		c := &memNode{dir: n.dir, modTime: n.modTime}
		seen[n] = c
		if n.dir {
			c.children, c.durable = map[string]*memNode{}, map[string]*memNode{}
			for name, child := range n.durable {
				cc := clone(child)
				c.children[name], c.durable[name] = cc, cc
			}
			return c
		}
		keep := n.synced
		if r := opts.Rand; r != nil && len(n.data) > len(n.synced) && bytes.Equal(n.data[:len(n.synced)], n.synced) {
			keep = n.data[:len(n.synced)+r.Intn(len(n.data)-len(n.synced)+1)]
		}
		c.data = append([]byte(nil), keep...)
		c.synced = append([]byte(nil), keep...)
		return c
	}
	out := NewMem()
	out.root = clone(m.root)
	out.now = m.now
	return out
}

// split turns a path into its elements below the root.
func split(name string) []string {
	name = filepath.ToSlash(filepath.Clean(name))
	name = strings.Trim(name, "/")
	if name == "" || name == "." {
		return nil
	}
	return strings.Split(name, "/")
}

// lookupLocked finds the node at name.
func (m *MemFS) lookupLocked(op, name string) (*memNode, error) {
	n := m.root
	for _, e := range split(name) {
		if !n.dir {
			return nil, &os.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
		}
		c, ok := n.children[e]
		if !ok {
			return nil, &os.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		n = c
	}
	return n, nil
}

// parentLocked finds the directory holding name and name's last element.
func (m *MemFS) parentLocked(op, name string) (*memNode, string, error) {
	els := split(name)
	if len(els) == 0 {
		return nil, "", &os.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	p, err := m.lookupLocked(op, filepath.Join(append([]string{"/"}, els[:len(els)-1]...)...))
	if err != nil {
		return nil, "", err
	}
	if !p.dir {
		return nil, "", &os.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
	}
	return p, els[len(els)-1], nil
}

// OpenFile opens name with os.O_* flags.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, base, err := m.parentLocked("open", name)
	if err != nil {
		return nil, err
	}
	n, ok := p.children[base]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case ok && n.dir && flag&(os.O_WRONLY|os.O_RDWR) != 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !ok:
		n = &memNode{modTime: m.now()}
		p.children[base] = n
	}
	if flag&os.O_TRUNC != 0 && !n.dir {
		n.data = nil
		n.modTime = m.now()
	}
	return &memFile{fs: m, n: n, name: name, flag: flag}, nil
}

// OpenDir opens a directory for Sync.
func (m *MemFS) OpenDir(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("open", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	return &memFile{fs: m, n: n, name: name, flag: os.O_RDONLY}, nil
}

// Rename moves oldname to newname, replacing a file there.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	op, ob, err := m.parentLocked("rename", oldname)
	if err != nil {
		return err
	}
	n, ok := op.children[ob]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	np, nb, err := m.parentLocked("rename", newname)
	if err != nil {
		return err
	}
	if t, ok := np.children[nb]; ok && t.dir && (!n.dir || len(t.children) > 0) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: syscall.EEXIST}
	}
	delete(op.children, ob)
	np.children[nb] = n
	return nil
}

// Remove removes a file or an empty directory.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, base, err := m.parentLocked("remove", name)
	if err != nil {
		return err
	}
	n, ok := p.children[base]
	if !ok {
		return &os.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir && len(n.children) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(p.children, base)
	return nil
}

// RemoveAll removes name and its descendants. Like unlink on Linux, the
// removal of the tree's entries is durable once name's parent is synced.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, base, err := m.parentLocked("removeall", name)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	delete(p.children, base)
	return nil
}

// MkdirAll creates name and missing parents. New directories are durable
// once their parent is synced.
func (m *MemFS) MkdirAll(name string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, e := range split(name) {
		c, ok := n.children[e]
		if !ok {
			c = newDirNode()
			n.children[e] = c
		}
		if !c.dir {
			return &os.PathError{Op: "mkdir", Path: name, Err: syscall.ENOTDIR}
		}
		n = c
	}
	return nil
}

// ReadDir lists a directory sorted by name.
func (m *MemFS) ReadDir(name string) ([]os.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
	}
	out := make([]os.DirEntry, 0, len(n.children))
	for e, c := range n.children {
		out = append(out, fs.FileInfoToDirEntry(c.infoLocked(e)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Stat describes name.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("stat", name)
	if err != nil {
		return nil, err
	}
	return n.infoLocked(filepath.Base(name)), nil
}

// Lstat is Stat: a MemFS has no symbolic links.
func (m *MemFS) Lstat(name string) (os.FileInfo, error) { return m.Stat(name) }

// Lock creates name and holds an in-process exclusive lock on it.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	key := filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[key] {
		return nil, fmt.Errorf("lock %s: %w", name, ErrLocked)
	}
	m.locks[key] = true
	return memLock{m, key}, nil
}

type memLock struct {
	m   *MemFS
	key string
}

func (l memLock) Close() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	delete(l.m.locks, l.key)
	return nil
}

func (n *memNode) infoLocked(name string) os.FileInfo {
	mode := os.FileMode(0o644)
	if n.dir {
		mode = os.ModeDir | 0o755
	}
	return memInfo{name: name, size: int64(len(n.data)), mode: mode, mod: n.modTime}
}

type memInfo struct {
	name string
	size int64
	mode os.FileMode
	mod  time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() os.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }

// memFile is an open MemFS file or directory.
type memFile struct {
	fs     *MemFS
	n      *memNode
	name   string
	flag   int
	mu     sync.Mutex // guards pos and closed
	pos    int64
	closed bool
}

func (f *memFile) check(op string, write bool) error {
	if f.closed {
		return &os.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	}
	if f.n.dir && op != "sync" && op != "stat" && op != "close" {
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EISDIR}
	}
	if write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	if !write && op == "read" && f.flag&os.O_WRONLY != 0 {
		return &os.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	return nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Read(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.readAt(b, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readAt(b, off)
}

func (f *memFile) readAt(b []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if off >= int64(len(f.n.data)) {
		if len(b) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(b, f.n.data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flag&os.O_APPEND != 0 {
		f.fs.mu.Lock()
		f.pos = int64(len(f.n.data))
		f.fs.mu.Unlock()
	}
	n, err := f.writeAt(b, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writeAt(b, off)
}

func (f *memFile) writeAt(b []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: fs.ErrInvalid}
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n := f.n
	// synced is always a copy, so data may change in place.
	if end := off + int64(len(b)); end > int64(len(n.data)) {
		if end <= int64(cap(n.data)) {
			n.data = n.data[:end]
		} else {
			grown := make([]byte, end, max(end, 2*int64(cap(n.data))))
			copy(grown, n.data)
			n.data = grown
		}
	}
	copy(n.data[off:], b)
	n.modTime = f.fs.now()
	return len(b), nil
}

func (f *memFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n := f.n
	d := make([]byte, size)
	copy(d, n.data)
	n.data = d
	n.modTime = f.fs.now()
	return nil
}

// Sync makes the file's bytes, or a directory's entries, durable.
func (f *memFile) Sync() error {
	f.mu.Lock()
	if err := f.check("sync", false); err != nil {
		f.mu.Unlock()
		return err
	}
	f.mu.Unlock()
	f.fs.mu.Lock()
	n := f.n
	if n.dir {
		n.durable = make(map[string]*memNode, len(n.children))
		for k, v := range n.children {
			n.durable[k] = v
		}
	} else {
		n.synced = append([]byte(nil), n.data...)
	}
	hook := f.fs.syncHook
	f.fs.mu.Unlock()
	if hook != nil {
		hook(f.name)
	}
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.n.infoLocked(filepath.Base(f.name)), nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	return nil
}

// CanSyncFS reports true: MemFS is an FSSyncer.
func (m *MemFS) CanSyncFS() bool { return true }

// SyncFS makes every file's bytes and every directory's entries durable,
// as syncfs(2) does for the file system holding dir.
func (m *MemFS) SyncFS(dir File) error {
	f, ok := dir.(*memFile)
	if !ok || f.fs != m {
		return fmt.Errorf("syncfs: %s is not a directory of this file system", dir.Name())
	}
	f.mu.Lock()
	err := f.check("sync", false)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	m.mu.Lock()
	var walk func(n *memNode)
	walk = func(n *memNode) {
		if !n.dir {
			n.synced = append([]byte(nil), n.data...)
			return
		}
		n.durable = make(map[string]*memNode, len(n.children))
		for k, v := range n.children {
			n.durable[k] = v
			walk(v)
		}
	}
	walk(m.root)
	hook := m.syncHook
	m.mu.Unlock()
	if hook != nil {
		hook(f.name)
	}
	return nil
}
