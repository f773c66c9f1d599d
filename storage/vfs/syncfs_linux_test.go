package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestKernelVersion(t *testing.T) {
	for _, c := range []struct {
		release      string
		major, minor int
		ok           bool
	}{
		{"6.18.44-fc-v1272", 6, 18, true},
		{"5.8.0", 5, 8, true},
		{"5.7.19-generic", 5, 7, true},
		{"4.19", 4, 19, true},
		{"5.10rc1", 5, 10, true},
		{"6", 0, 0, false},
		{"x.y", 0, 0, false},
	} {
		major, minor, ok := kernelVersion(c.release)
		if major != c.major || minor != c.minor || ok != c.ok {
			t.Errorf("kernelVersion(%q) = %d, %d, %v; want %d, %d, %v", c.release, major, minor, ok, c.major, c.minor, c.ok)
		}
	}
}

// On the OS, SyncFS runs syncfs(2) on a directory's descriptor; on a
// kernel older than 5.8 (syncfs reports no write-back errors there) it
// refuses.
func TestOSSyncFS(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Default.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = SyncFS(Default, d)
	if CanSyncFS(Default) && err != nil {
		t.Fatal(err)
	}
	if !CanSyncFS(Default) && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("SyncFS on a kernel without error reporting: %v, want ErrUnsupported", err)
	}
}
