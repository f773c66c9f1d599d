package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

// TestAppendTxnIndexDurableWithFlush: an entry appended as its marker is
// written lands in the marker's segment and survives a crash once the log
// was flushed (the flush fsyncs the file); an entry not yet flushed may be
// lost, and nothing else is.
func TestAppendTxnIndexDurableWithFlush(t *testing.T) {
	mem, dir := memLogDir(t)
	cfg := Config{FS: mem, Logger: quiet, SegmentBytes: 1000}
	l, err := Open(dir, cfg, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 10; i++ {
		mustAppend(t, l, 0, batchOf(1, int64(i), 200))
	}
	first := TxnIndexEntry{ProducerID: 7, FirstOffset: 2, LastOffset: 9, LastStableOffset: 10}
	if err := l.AppendTxnIndex(first); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendTxnIndex(TxnIndexEntry{ProducerID: 7, LastOffset: 10}); err == nil {
		t.Fatal("an entry beyond the log end was accepted")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	bases := segmentBasesOf(t, l)
	if _, err := mem.Stat(segmentPath(dir, bases[len(bases)-1], txnIndexSuffix)); err != nil {
		t.Fatalf("no txnindex beside the active segment %d: %v", bases[len(bases)-1], err)
	}
	crashed := mem.CrashClone(vfs.CrashOptions{})
	mustAppend(t, l, 0, batchOf(1, 10, 200))
	if err := l.AppendTxnIndex(TxnIndexEntry{ProducerID: 8, FirstOffset: 10, LastOffset: 10, LastStableOffset: 11}); err != nil {
		t.Fatal(err)
	}
	cfg.FS = crashed
	l2, err := Open(dir, cfg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got, err := l2.TxnIndex(l2.LogEndOffset()); err != nil || len(got) != 1 || got[0] != first {
		t.Fatalf("after the crash: %+v %v, want %+v", got, err, first)
	}
}

// TestTruncateDropsTxnIndexEntries: truncation drops the entries whose
// marker it removes, as Kafka's TransactionIndex.truncateTo; entries below
// stay, and a segment left with none loses its file.
func TestTruncateDropsTxnIndexEntries(t *testing.T) {
	l, dir := openLog(t, Config{})
	for i := 0; i < 10; i++ {
		mustAppend(t, l, 0, batchOf(1, int64(i), 10))
	}
	a := TxnIndexEntry{ProducerID: 1, FirstOffset: 1, LastOffset: 3, LastStableOffset: 4}
	b := TxnIndexEntry{ProducerID: 2, FirstOffset: 4, LastOffset: 6, LastStableOffset: 7}
	for _, e := range []TxnIndexEntry{a, b} {
		if err := l.AppendTxnIndex(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.TruncateTo(8); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.TxnIndex(100); len(got) != 2 {
		t.Fatalf("truncation above both markers: %+v", got)
	}
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if got, err := l.TxnIndex(100); err != nil || len(got) != 1 || got[0] != a {
		t.Fatalf("after truncating to 6: %+v %v, want only %+v", got, err, a)
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*"+txnIndexSuffix)); len(m) != 0 {
		t.Fatalf("txnindex kept with no entries: %v", m)
	}
	// A damaged file is removed at truncation (the next snapshot rewrites it).
	mustAppend(t, l, 0, batchOf(1, 3, 10))
	if err := os.WriteFile(segmentPath(dir, 0, txnIndexSuffix), []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segmentPath(dir, 0, txnIndexSuffix)); !os.IsNotExist(err) {
		t.Fatalf("damaged txnindex kept: %v", err)
	}
}

// TestIndexFilesAlwaysWritten: every segment has its .index and .timeindex
// after a clean close, even with no entry in them, and a segment loaded
// without them gets them: Kafka recovers a segment whose offset index is
// missing (and rebuilds its producer state from there).
func TestIndexFilesAlwaysWritten(t *testing.T) {
	dir := t.TempDir() + "/t-0"
	l, err := Open(dir, Config{Logger: quiet}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, 0, batchOf(1, 1, 10)) // far below log.index.interval.bytes
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if _, err := os.Stat(segmentPath(dir, 0, suf)); err != nil {
				t.Fatalf("%s: %v", when, err)
			}
		}
	}
	check("after a clean close")
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		os.Remove(segmentPath(dir, 0, suf))
	}
	l, err = Open(dir, Config{Logger: quiet}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check("after a close of a log opened without them")
}
