package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// OpKind names an operation that an error-injecting FS may fail.
type OpKind int

// Operations seen by an Injector.
const (
	OpOpen     OpKind = iota // FS.OpenFile, FS.OpenDir
	OpRead                   // File.Read, File.ReadAt, FS.ReadDir
	OpWrite                  // File.Write, File.WriteAt
	OpSync                   // File.Sync (of a file or a directory)
	OpTruncate               // File.Truncate
	OpRename                 // FS.Rename
	OpRemove                 // FS.Remove, FS.RemoveAll
	OpMkdir                  // FS.MkdirAll
	OpStat                   // FS.Stat, File.Stat
	OpLock                   // FS.Lock
)

var opNames = [...]string{"open", "read", "write", "sync", "truncate", "rename", "remove", "mkdir", "stat", "lock"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// Op is one operation about to run. Path is the file's path (the old name
// for a rename).
type Op struct {
	Kind OpKind
	Path string
}

// Injector decides, before each operation, whether it fails: a non-nil
// error is returned instead of running it. For a write, an error made by
// ShortWrite first writes that many bytes.
type Injector func(Op) error

// shortWrite is an injected error that lets the first n bytes through.
type shortWrite struct {
	n   int
	err error
}

func (e *shortWrite) Error() string { return fmt.Sprintf("short write of %d bytes: %v", e.n, e.err) }
func (e *shortWrite) Unwrap() error { return e.err }

// ShortWrite is an injected write error that first writes the leading n
// bytes (fewer if the write is shorter), as a disk that fills up mid-write.
func ShortWrite(n int, err error) error { return &shortWrite{n: n, err: err} }

// OnNth fails, with err, the nth (1-based) operation of kind whose path
// contains pathPart, and only that one. n = 0 fails every such operation.
// The returned injector is safe for concurrent use.
func OnNth(kind OpKind, pathPart string, n int, err error) Injector {
	var mu sync.Mutex
	seen := 0
	return func(op Op) error {
		if op.Kind != kind || !strings.Contains(op.Path, pathPart) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		if n == 0 || seen == n {
			return err
		}
		return nil
	}
}

// Switchable is an injector that can be changed while in use: nil injects
// nothing.
type Switchable struct {
	mu  sync.Mutex
	inj Injector
}

// Set replaces the injector.
func (s *Switchable) Set(inj Injector) {
	s.mu.Lock()
	s.inj = inj
	s.mu.Unlock()
}

// Inject runs the current injector; use s.Inject as an Injector.
func (s *Switchable) Inject(op Op) error {
	s.mu.Lock()
	inj := s.inj
	s.mu.Unlock()
	if inj == nil {
		return nil
	}
	return inj(op)
}

// WithErrors wraps fs so that inj may fail any operation. Injected errors
// are wrapped in *os.PathError, as real ones are.
func WithErrors(fs FS, inj Injector) FS { return &errorFS{fs: fs, inj: inj} }

type errorFS struct {
	fs  FS
	inj Injector
}

func (e *errorFS) check(kind OpKind, path string) error {
	if err := e.inj(Op{Kind: kind, Path: path}); err != nil {
		return &os.PathError{Op: kind.String(), Path: path, Err: err}
	}
	return nil
}

func (e *errorFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := e.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, e: e}, nil
}

func (e *errorFS) OpenDir(name string) (File, error) {
	if err := e.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, e: e}, nil
}

func (e *errorFS) Rename(oldname, newname string) error {
	if err := e.check(OpRename, oldname); err != nil {
		return err
	}
	return e.fs.Rename(oldname, newname)
}

func (e *errorFS) Remove(name string) error {
	if err := e.check(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

func (e *errorFS) RemoveAll(name string) error {
	if err := e.check(OpRemove, name); err != nil {
		return err
	}
	return e.fs.RemoveAll(name)
}

func (e *errorFS) MkdirAll(name string, perm os.FileMode) error {
	if err := e.check(OpMkdir, name); err != nil {
		return err
	}
	return e.fs.MkdirAll(name, perm)
}

func (e *errorFS) ReadDir(name string) ([]os.DirEntry, error) {
	if err := e.check(OpRead, name); err != nil {
		return nil, err
	}
	return e.fs.ReadDir(name)
}

func (e *errorFS) Stat(name string) (os.FileInfo, error) {
	if err := e.check(OpStat, name); err != nil {
		return nil, err
	}
	return e.fs.Stat(name)
}

func (e *errorFS) Lstat(name string) (os.FileInfo, error) {
	if err := e.check(OpStat, name); err != nil {
		return nil, err
	}
	return e.fs.Lstat(name)
}

func (e *errorFS) Lock(name string) (io.Closer, error) {
	if err := e.check(OpLock, name); err != nil {
		return nil, err
	}
	return e.fs.Lock(name)
}

// errorFile wraps a File of the inner FS.
type errorFile struct {
	File
	e *errorFS
}

// OSFile exposes the inner *os.File, if any.
func (f *errorFile) OSFile() *os.File {
	of, _ := AsOSFile(f.File)
	return of
}

func (f *errorFile) Read(b []byte) (int, error) {
	if err := f.e.check(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Read(b)
}

func (f *errorFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.e.check(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.ReadAt(b, off)
}

// writeErr applies an injected write error, writing a short prefix first
// if it asks for one.
func (f *errorFile) writeErr(b []byte, write func([]byte) (int, error)) (int, error) {
	err := f.e.inj(Op{Kind: OpWrite, Path: f.Name()})
	if err == nil {
		return write(b)
	}
	n := 0
	var sw *shortWrite
	if errors.As(err, &sw) && sw.n > 0 {
		n, _ = write(b[:min(sw.n, len(b))])
	}
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: err}
}

func (f *errorFile) Write(b []byte) (int, error) {
	return f.writeErr(b, f.File.Write)
}

func (f *errorFile) WriteAt(b []byte, off int64) (int, error) {
	return f.writeErr(b, func(p []byte) (int, error) { return f.File.WriteAt(p, off) })
}

func (f *errorFile) Sync() error {
	if err := f.e.check(OpSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.e.check(OpTruncate, f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *errorFile) Stat() (os.FileInfo, error) {
	if err := f.e.check(OpStat, f.Name()); err != nil {
		return nil, err
	}
	return f.File.Stat()
}
