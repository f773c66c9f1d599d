package storage

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

// opRecorder records the operations on index files that pass through a
// vfs.WithErrors FS while it is on.
type opRecorder struct {
	mu  sync.Mutex
	on  bool
	ops []vfs.Op
}

func (r *opRecorder) inject(op vfs.Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on && (strings.HasSuffix(op.Path, indexSuffix) || strings.HasSuffix(op.Path, timeIndexSuffix)) {
		r.ops = append(r.ops, op)
	}
	return nil
}

// record turns recording on and returns a func that turns it off and
// returns what was recorded.
func (r *opRecorder) record() func() []vfs.Op {
	r.mu.Lock()
	r.on, r.ops = true, nil
	r.mu.Unlock()
	return func() []vfs.Op {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.on = false
		return r.ops
	}
}

func kinds(ops []vfs.Op, k vfs.OpKind) []vfs.Op {
	var out []vfs.Op
	for _, op := range ops {
		if op.Kind == k {
			out = append(out, op)
		}
	}
	return out
}

// fileBytes reads a whole file of fs, failing the test if it is absent.
func fileBytes(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.OpenFile(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && len(b) > 0 {
		t.Fatal(err)
	}
	return b
}

// A segment's index files are created with it, empty, as Kafka's are, so
// that closing a log whose segments never got an index entry (most
// partitions of a large dev cluster) writes no index file.
func TestSegmentIndexFilesCreatedWithTheSegment(t *testing.T) {
	mem, dir := memLogDir(t)
	rec := &opRecorder{}
	fs := vfs.WithErrors(mem, rec.inject)
	l, err := Open(dir, Config{FS: fs, Logger: quiet}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if b := fileBytes(t, mem, segmentPath(dir, 0, suf)); len(b) != 0 {
			t.Fatalf("new %s holds %d bytes, want an empty file", suf, len(b))
		}
	}
	stop := rec.record()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if ops := stop(); len(ops) != 0 {
		t.Fatalf("closing a log that never got an index entry touched its index files: %v", ops)
	}

	// A rolled segment gets its files too; a stale index at its base
	// (left by a crash before a truncation reached the disk) is emptied.
	l, err = Open(dir, Config{FS: fs, Logger: quiet, IndexIntervalBytes: 1}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, 0, batchOf(2, 1, 10))
	stale, err := mem.OpenFile(segmentPath(dir, 2, indexSuffix), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stale.WriteAt(make([]byte, offsetIndexEntrySize), 0); err != nil {
		t.Fatal(err)
	}
	stale.Close()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if b := fileBytes(t, mem, segmentPath(dir, 2, suf)); len(b) != 0 {
			t.Fatalf("rolled segment's %s holds %d bytes, want an empty file", suf, len(b))
		}
	}
}

// A recovery that rebuilds a segment's indexes keeps the index files it
// found when they hold exactly the rebuilt entries (the usual case after
// kill -9, whose page cache survives): the close writes none of them. The
// files may be only in the page cache, so the next flush fsyncs them: after
// a power loss past that flush, they are whole on disk.
func TestRecoveryKeepsMatchingIndexFiles(t *testing.T) {
	mem, dir := memLogDir(t)
	rec := &opRecorder{}
	fs := vfs.WithErrors(mem, rec.inject)
	cfg := Config{FS: fs, Logger: quiet, IndexIntervalBytes: 1}
	l, err := Open(dir, cfg, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		mustAppend(t, l, 0, batchOf(2, int64(10+i), 10))
	}
	// Written without any fsync, as a Dir's close does before its syncfs;
	// then the process dies before that sync.
	if _, err := l.closeForSyncFS(); err != nil {
		t.Fatal(err)
	}
	wantIdx := fileBytes(t, mem, segmentPath(dir, 0, indexSuffix))
	wantTimes := fileBytes(t, mem, segmentPath(dir, 0, timeIndexSuffix))
	if len(wantIdx) != 4*offsetIndexEntrySize || len(wantTimes) != 4*timeIndexEntrySize {
		t.Fatalf("index files of %d and %d bytes, want 4 entries each", len(wantIdx), len(wantTimes))
	}

	stop := rec.record()
	l, err = Open(dir, cfg, 0, false) // unclean: the segment is rebuilt
	if err != nil {
		t.Fatal(err)
	}
	if got := l.RecoveryStats(); got.Segments != 1 {
		t.Fatalf("recovered %+v, want the segment rebuilt", got)
	}
	if w := kinds(stop(), vfs.OpWrite); len(w) != 0 {
		t.Fatalf("recovery wrote index files it could keep: %v", w)
	}

	stop = rec.record()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	ops := stop()
	if w := kinds(ops, vfs.OpWrite); len(w) != 0 {
		t.Fatalf("flush rewrote kept index files: %v", w)
	}
	if s := kinds(ops, vfs.OpSync); len(s) != 2 {
		t.Fatalf("flush fsynced %v, want both kept index files", s)
	}
	crashed := mem.CrashClone(vfs.CrashOptions{})
	if got := fileBytes(t, crashed, segmentPath(dir, 0, indexSuffix)); !bytes.Equal(got, wantIdx) {
		t.Fatalf("offset index after a power loss past the flush: %d bytes, want %d", len(got), len(wantIdx))
	}
	if got := fileBytes(t, crashed, segmentPath(dir, 0, timeIndexSuffix)); !bytes.Equal(got, wantTimes) {
		t.Fatalf("time index after a power loss past the flush: %d bytes, want %d", len(got), len(wantTimes))
	}

	stop = rec.record()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if w := kinds(stop(), vfs.OpWrite); len(w) != 0 {
		t.Fatalf("close after the flush wrote %v, want nothing", w)
	}
}
