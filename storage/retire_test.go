package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// TestDroppedSegmentsDeletedLater checks that a segment leaving a log in a
// Dir (here by a new log start offset) is renamed with DeletedFileSuffix
// at once and deleted only after the dir's FileDeleteDelayMs, or the log's
// own, off the log's lock, as Kafka does; and that the next Open of the
// log deletes any retired file left behind.
func TestDroppedSegmentsDeletedLater(t *testing.T) {
	mem := vfs.NewMem()
	clock := newFakeClock()
	const path = "/logs"
	cfg := DirConfig{FS: mem, Logger: quiet, Now: clock.Now, FileDeleteDelayMs: 60_000,
		ConfigFor: func(string, int32) Config { return Config{SegmentBytes: 400} }}
	passes := hookPasses(t)
	d, err := OpenDirConfig(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := d.Create(tp, Config{SegmentBytes: 400})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		mustAppend(t, l, 0, batchOf(2, 1, 100))
	}
	segs, err := mem.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(l.Dir(), fmt.Sprintf("%020d.log", 0))
	if _, err := mem.Stat(first); err != nil {
		t.Fatalf("first segment: %v (dir %v)", err, segs)
	}
	if err := l.SetLogStartOffset(l.LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dropped segment still under its name: %v", err)
	}
	if _, err := mem.Stat(first + DeletedFileSuffix); err != nil {
		t.Fatalf("dropped segment not retired: %v", err)
	}
	// A topic's own file.delete.delay.ms (5 s here) rules its segments.
	_, first5 := createAndRetireFirst(t, d, mem, TopicPartition{Topic: "t5", Partition: 0},
		Config{SegmentBytes: 400, FileDeleteDelayMs: 5_000})
	clock.Advance(6 * time.Second)
	passes.pass(t, d)
	if _, err := mem.Stat(first5); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("retired segment kept after the topic's file.delete.delay.ms: %v", err)
	}

	clock.Advance(53 * time.Second) // 59 s after the first was retired
	passes.pass(t, d)
	if _, err := mem.Stat(first + DeletedFileSuffix); err != nil {
		t.Fatalf("retired segment deleted before file.delete.delay.ms: %v", err)
	}
	clock.Advance(2 * time.Second)
	passes.pass(t, d)
	if _, err := mem.Stat(first + DeletedFileSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("retired segment kept after file.delete.delay.ms: %v", err)
	}

	// A retired file left by a stopped process goes at the next Open.
	leftover := filepath.Join(l.Dir(), fmt.Sprintf("%020d.log", 1)+DeletedFileSuffix)
	if err := vfs.WriteFile(mem, leftover, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = OpenDirConfig(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := mem.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("retired file kept by Open: %v", err)
	}
	if d.Log(tp) == nil {
		t.Fatal("log not reopened")
	}
}

// createAndRetireFirst creates tp's log in d with cfg (segments of 400
// bytes or so), appends past a few rolls, moves the log start into the last
// segment, and returns the log and the retired path of its first segment,
// which it checks exists in mem.
func createAndRetireFirst(t *testing.T, d *Dir, mem *vfs.MemFS, tp TopicPartition, cfg Config) (*Log, string) {
	t.Helper()
	l, err := d.Create(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		mustAppend(t, l, 0, batchOf(2, 1, 100))
	}
	if err := l.SetLogStartOffset(l.LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	retired := filepath.Join(l.Dir(), fmt.Sprintf("%020d.log", 0)) + DeletedFileSuffix
	if _, err := mem.Stat(retired); err != nil {
		t.Fatalf("dropped segment not retired: %v", err)
	}
	return l, retired
}

// TestDeletedInSteps checks that the dir's background goroutine frees at
// most deleteStepBytes per call when it deletes a retired segment or a
// removed log's directory: every file larger than that is truncated from
// its end in steps before it is removed, and nothing is left.
func TestDeletedInSteps(t *testing.T) {
	defer func(s int64) { deleteStepBytes = s }(deleteStepBytes)
	deleteStepBytes = 64
	mem := vfs.NewMem()
	// Each truncation, with the size it starts from.
	type cut struct {
		path string
		from int64
	}
	var cuts []cut // written by the background goroutine, read after its pass
	fs := vfs.WithErrors(mem, func(op vfs.Op) error {
		if op.Kind == vfs.OpTruncate {
			if info, err := mem.Stat(op.Path); err == nil {
				cuts = append(cuts, cut{op.Path, info.Size()})
			}
		}
		return nil
	})
	clock := newFakeClock()
	passes := hookPasses(t)
	d, err := OpenDirConfig("/logs", DirConfig{FS: fs, Logger: quiet, Now: clock.Now, FileDeleteDelayMs: 1000,
		ConfigFor: func(string, int32) Config { return Config{SegmentBytes: 400} }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, retired := createAndRetireFirst(t, d, mem, tp, Config{SegmentBytes: 400})
	info, err := mem.Stat(retired)
	if err != nil {
		t.Fatal(err)
	}
	size := info.Size()
	if size <= 2*deleteStepBytes {
		t.Fatalf("retired segment of %d bytes: too small to need steps", size)
	}
	// Each step frees at most deleteStepBytes, and they start at the end.
	checkSteps := func(path string, size int64) {
		t.Helper()
		want := size
		var n int
		for _, c := range cuts {
			if c.path != path {
				continue
			}
			if c.from != want {
				t.Fatalf("%s: truncation %d started at %d bytes, want %d", path, n, c.from, want)
			}
			want = max(want-deleteStepBytes, 0)
			n++
		}
		if steps := (size + deleteStepBytes - 1) / deleteStepBytes; int64(n) != steps {
			t.Fatalf("%s: %d truncations of a %d-byte file, want %d (cuts %v)", path, n, size, steps, cuts)
		}
		if _, err := mem.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s kept: %v", path, err)
		}
	}
	clock.Advance(2 * time.Second)
	passes.pass(t, d)
	checkSteps(retired, size)

	// A removed log: its directory's files go the same way.
	sizes := map[string]int64{}
	ents, err := mem.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if info, err := mem.Stat(filepath.Join(l.Dir(), e.Name())); err == nil && info.Size() > deleteStepBytes {
			sizes[e.Name()] = info.Size()
		}
	}
	if len(sizes) == 0 {
		t.Fatalf("no file of the log to remove is over %d bytes: %v", deleteStepBytes, ents)
	}
	if err := d.Remove(tp); err != nil {
		t.Fatal(err)
	}
	var removed string
	if ents, err = mem.ReadDir("/logs"); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), DeleteDirSuffix) {
			removed = filepath.Join("/logs", e.Name())
		}
	}
	if removed == "" {
		t.Fatalf("no %s directory in %v", DeleteDirSuffix, ents)
	}
	clock.Advance(2 * time.Second)
	passes.pass(t, d)
	for name, size := range sizes {
		checkSteps(filepath.Join(removed, name), size)
	}
	if _, err := mem.Stat(removed); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removed log's directory kept: %v", err)
	}
}

// TestRemoveInStepsFollowsNoLink checks, on the real file system, that
// removeInSteps removes symbolic links as RemoveAll does, without
// truncating or removing what they point to: a removed log whose directory
// is a link to another disk, and a link inside a removed log's directory.
func TestRemoveInStepsFollowsNoLink(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "other-disk")
	if err := os.MkdirAll(filepath.Join(outside, "t-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 300)
	kept := []string{filepath.Join(outside, "t-0", "00000000000000000000.log"), filepath.Join(outside, "lone.log")}
	for _, p := range kept {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A removed log that is a link to a directory elsewhere.
	linkDir := filepath.Join(root, "logs", "t-0.abc-delete")
	if err := os.MkdirAll(filepath.Dir(linkDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "t-0"), linkDir); err != nil {
		t.Fatal(err)
	}
	// A removed log holding a file of its own and a link to a file elsewhere.
	realDir := filepath.Join(root, "logs", "u-0.def-delete")
	if err := os.MkdirAll(realDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(realDir, "00000000000000000000.log"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kept[1], filepath.Join(realDir, "linked.log")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{linkDir, realDir} {
		if err := removeInSteps(vfs.Default, p, 64); err != nil {
			t.Fatalf("removeInSteps %s: %v", p, err)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s kept: %v", p, err)
		}
	}
	for _, p := range kept {
		info, err := os.Stat(p)
		if err != nil || info.Size() != int64(len(data)) {
			t.Fatalf("%s, reached through a link, changed: %v (size %v)", p, err, info)
		}
	}
}
