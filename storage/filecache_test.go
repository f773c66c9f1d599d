package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

// TestFileCacheBoundsIdleDescriptors checks the cache keeps at most max
// idle descriptors, least recently used out, never closes one in use or
// pinned, closes a forgotten file at its last release, and recovers from
// EMFILE by closing idle descriptors.
func TestFileCacheBoundsIdleDescriptors(t *testing.T) {
	mem := vfs.NewMem()
	var sw vfs.Switchable
	c := newFileCache(vfs.WithErrors(mem, sw.Inject), 2)
	var files []*segFile
	for i := range 5 {
		name := fmt.Sprintf("/f%d", i)
		if err := vfs.WriteFileSynced(mem, name, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, c.file(name, nil))
	}
	pinned, err := files[0].acquire() // as an active segment
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	for _, f := range files[1:] {
		if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != f.path {
			t.Fatalf("read %s: %q, %v", f.path, buf, err)
		}
	}
	if n := c.openCount(); n != 3 {
		t.Fatalf("%d descriptors open, want 3 (1 pinned + 2 idle)", n)
	}
	if files[1].f != nil || files[2].f != nil || files[3].f == nil || files[4].f == nil {
		t.Fatal("the least recently used idle descriptors were not the ones closed")
	}
	busy, err := files[1].acquire() // a long read: goes over max rather than fail
	if err != nil {
		t.Fatal(err)
	}
	if _, err := files[2].ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := busy.ReadAt(buf, 0); err != nil {
		t.Fatalf("descriptor in use was closed: %v", err)
	}
	if err := files[1].close(); err != nil { // forgotten while in use
		t.Fatal(err)
	}
	if _, err := busy.ReadAt(buf, 0); err != nil {
		t.Fatalf("descriptor closed under its user: %v", err)
	}
	files[1].release()
	if _, err := files[1].ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read of a closed file: %v, want ErrClosed", err)
	}
	if _, err := pinned.ReadAt(buf, 0); err != nil {
		t.Fatalf("pinned descriptor closed: %v", err)
	}

	// Out of descriptors: idle ones are closed and the open retried once.
	fails := 1
	sw.Set(func(op vfs.Op) error {
		if op.Kind == vfs.OpOpen && fails > 0 {
			fails--
			return syscall.EMFILE
		}
		return nil
	})
	if _, err := files[3].ReadAt(buf, 0); err != nil {
		t.Fatalf("read with idle descriptors to spare: %v", err)
	}
	sw.Set(vfs.OnNth(vfs.OpOpen, "", 0, syscall.EMFILE))
	c.evictIdle()
	_, err = files[4].ReadAt(buf, 0)
	if !errors.Is(err, ErrTooManyOpenFiles) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("read with no descriptor left: %v, want ErrTooManyOpenFiles", err)
	}
}
