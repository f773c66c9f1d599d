package vfs

import (
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// fsCases runs f against the OS file system (in a temp dir) and MemFS.
func fsCases(t *testing.T, f func(t *testing.T, fs FS, root string)) {
	t.Run("os", func(t *testing.T) { f(t, Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) {
		m := NewMem()
		if err := m.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		f(t, m, "/data")
	})
}

func TestFSBasics(t *testing.T) {
	fsCases(t, func(t *testing.T, fs FS, root string) {
		dir := filepath.Join(root, "a", "b")
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "f")
		f, err := Create(fs, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("hello world"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(5); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("!"), 7); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if n, err := f.ReadAt(buf, 0); n != 8 || err != nil {
			t.Fatalf("ReadAt = %d, %v", n, err)
		}
		if string(buf) != "hello\x00\x00!" {
			t.Fatalf("contents %q", buf)
		}
		if _, err := f.ReadAt(buf, 4); !errors.Is(err, io.EOF) {
			t.Fatalf("ReadAt past end: %v, want EOF", err)
		}
		if st, err := f.Stat(); err != nil || st.Size() != 8 {
			t.Fatalf("Stat = %v, %v", st, err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fs.Rename(p, p+"2"); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("Stat of renamed: %v", err)
		}
		if b, err := ReadFile(fs, p+"2"); err != nil || len(b) != 8 {
			t.Fatalf("ReadFile = %q, %v", b, err)
		}
		ents, err := fs.ReadDir(dir)
		if err != nil || len(ents) != 1 || ents[0].Name() != "f2" || !ents[0].Type().IsRegular() {
			t.Fatalf("ReadDir = %v, %v", ents, err)
		}
		if _, err := fs.OpenFile(filepath.Join(dir, "missing"), os.O_RDWR, 0); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("open missing: %v", err)
		}
		if err := fs.Remove(dir); err == nil {
			t.Fatal("removed a non-empty directory")
		}
		if err := WriteFileAtomic(fs, filepath.Join(dir, "ck"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := fs.Lock(filepath.Join(root, ".lock"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Lock(filepath.Join(root, ".lock")); !errors.Is(err, ErrLocked) {
			t.Fatalf("second Lock: %v, want ErrLocked", err)
		}
		l.Close()
		if err := fs.RemoveAll(filepath.Join(root, "a")); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("Stat after RemoveAll: %v", err)
		}
		if err := fs.RemoveAll(filepath.Join(root, "a")); err != nil {
			t.Fatalf("RemoveAll of missing: %v", err)
		}
	})
}

func TestOSFileReachable(t *testing.T) {
	f, err := Create(Default, filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if of, ok := AsOSFile(f); !ok || of == nil {
		t.Fatal("Default file is not an *os.File")
	}
	ef, err := Create(WithErrors(Default, func(Op) error { return nil }), filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if _, ok := AsOSFile(ef); !ok {
		t.Fatal("error-injecting wrapper hides the *os.File")
	}
	if _, ok := AsOSFile(&memFile{}); ok {
		t.Fatal("a MemFS file claims an *os.File")
	}
}

func TestCrashCloneKeepsOnlyDurable(t *testing.T) {
	m := NewMem()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.MkdirAll("/d", 0o755))
	must(SyncDir(m, "/"))
	f, err := Create(m, "/d/synced")
	must(err)
	_, err = f.Write([]byte("durable"))
	must(err)
	must(f.Sync())
	_, err = f.Write([]byte("+lost"))
	must(err)
	g, err := Create(m, "/d/unsynced-entry")
	must(err)
	must(g.Sync())
	must(SyncDir(m, "/d")) // both entries durable now
	h, err := Create(m, "/d/never")
	must(err)
	_, err = h.Write([]byte("x"))
	must(err)
	must(h.Sync()) // bytes durable, entry not
	must(m.Rename("/d/unsynced-entry", "/d/renamed"))

	c := m.CrashClone(CrashOptions{})
	if b, err := ReadFile(c, "/d/synced"); err != nil || string(b) != "durable" {
		t.Fatalf("synced file after crash: %q, %v", b, err)
	}
	if _, err := c.Stat("/d/never"); !os.IsNotExist(err) {
		t.Fatalf("entry never synced survived: %v", err)
	}
	if _, err := c.Stat("/d/unsynced-entry"); err != nil {
		t.Fatalf("rename without dir sync lost the old name: %v", err)
	}
	if _, err := c.Stat("/d/renamed"); !os.IsNotExist(err) {
		t.Fatalf("rename without dir sync became durable: %v", err)
	}
	must(SyncDir(m, "/d"))
	c = m.CrashClone(CrashOptions{})
	if _, err := c.Stat("/d/renamed"); err != nil {
		t.Fatalf("rename after dir sync lost: %v", err)
	}
	// The original keeps everything.
	if b, _ := ReadFile(m, "/d/synced"); string(b) != "durable+lost" {
		t.Fatalf("original changed: %q", b)
	}
	// A torn crash keeps a prefix of the unsynced bytes, never other bytes.
	for i := range 20 {
		c := m.CrashClone(CrashOptions{Rand: rand.New(rand.NewSource(int64(i)))})
		b, _ := ReadFile(c, "/d/synced")
		if len(b) < 7 || string(b) != "durable+lost"[:len(b)] {
			t.Fatalf("torn crash kept %q", b)
		}
	}
}

func TestMemOpenFileRemovedStaysUsable(t *testing.T) {
	m := NewMem()
	f, err := Create(m, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Remove("/f"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "abc" {
		t.Fatalf("read of removed file: %q, %v", b, err)
	}
}

func TestErrorFSInjects(t *testing.T) {
	m := NewMem()
	efs := WithErrors(m, OnNth(OpWrite, "seg", 2, ShortWrite(3, syscall.ENOSPC)))
	f, err := Create(efs, "/seg")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	n, err := f.Write([]byte("second"))
	if n != 3 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second write = %d, %v; want 3, ENOSPC", n, err)
	}
	if _, err := f.Write([]byte("third")); err != nil {
		t.Fatalf("third write: %v", err)
	}
	if b, _ := ReadFile(m, "/seg"); string(b) != "firstsecthird" {
		t.Fatalf("contents %q", b)
	}
	var sw Switchable
	efs = WithErrors(m, sw.Inject)
	g, err := efs.OpenFile("/seg", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	sw.Set(OnNth(OpSync, "", 0, syscall.EIO))
	if err := g.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v, want EIO", err)
	}
	sw.Set(OnNth(OpRename, "/seg", 1, syscall.EIO))
	if err := efs.Rename("/seg", "/x"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename: %v, want EIO", err)
	}
	if err := efs.Rename("/seg", "/x"); err != nil {
		t.Fatalf("second rename: %v", err)
	}
	sw.Set(OnNth(OpOpen, "", 0, syscall.EMFILE))
	if _, err := efs.OpenFile("/x", os.O_RDONLY, 0); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("open: %v, want EMFILE", err)
	}
}

// MemFS.SyncFS makes everything durable: bytes of files never synced and
// entries of directories never synced, however deep.
func TestMemSyncFS(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/data/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Create(m, "/data/a/b/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := m.CrashClone(CrashOptions{}); fileExists(got, "/data/a/b/f") {
		t.Fatal("unsynced file survived a crash")
	}
	d, err := m.OpenDir("/data")
	if err != nil {
		t.Fatal(err)
	}
	if !CanSyncFS(m) {
		t.Fatal("MemFS cannot SyncFS")
	}
	if err := SyncFS(m, d); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(m.CrashClone(CrashOptions{}), "/data/a/b/f")
	if err != nil || string(b) != "hello" {
		t.Fatalf("after SyncFS and a crash: %q, %v", b, err)
	}
	if CanSyncFS(WithErrors(m, func(Op) error { return nil })) {
		t.Fatal("the error-injecting wrapper claims SyncFS")
	}
}

func fileExists(fs FS, name string) bool {
	_, err := fs.Stat(name)
	return err == nil
}
