package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage/vfs"
)

// File name suffixes of a segment.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentPath is Kafka's file name for the segment starting at base.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset encoded in a segment file name
// such as "00000000000000000042.log", and whether name has that form.
func parseSegmentName(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// segment is one "<base>.log" file with its offset and time indexes.
//
// The indexes live in memory (index, times); the index files are created
// empty with the segment and written only when it is synced (syncFiles),
// so a segment holds no index descriptor. The ".log" descriptor comes from
// the log dir's fileCache; the active segment pins it open while the
// descriptor limit allows.
//
// Fields below the files are guarded by the owning Log's mu: written only
// with the write lock held, read by readers under the read lock (see view).
// Invariants: size is the file size and a batch boundary; every batch in
// [0,size) has offsets in [base, next) with next-1-base <= MaxInt32; index
// and times slices are never overwritten in place below their length
// (truncation reallocates), so a reader's copy of a slice header stays
// valid; unless idxStale, the index files hold exactly the first idxOnDisk
// and timesOnDisk entries of index and times.
type segment struct {
	base   int64
	dir    string
	fs     vfs.FS
	log    *segFile
	pinned bool // holds a use of log, keeping its descriptor open

	size            int64
	next            int64 // offset after the last batch; base when empty
	index           []indexEntry
	times           []timeEntry
	maxTs           int64 // largest batch max timestamp, -1 if none
	maxTsOffset     int64 // last offset of the batch holding maxTs, -1 if none
	bytesSinceIndex int64
	rollStart       time.Time // time of the first append since creation or load; zero if none
	// writebackFrom is where the next writeback range starts (writeback.go).
	writebackFrom int64
	dirty         bool // written since the last fsync

	idxOnDisk, timesOnDisk int
	idxStale               bool // the index files must be rewritten whole
	// idxMissing: an index file does not exist (a segment loaded without
	// it); the next sync writes both whole, even empty, because Kafka
	// recovers a segment whose .index is missing.
	idxMissing bool
	// idxUnsynced: the index files were adopted by a recovery (adoptIndexFiles)
	// and may be only in the page cache; the next sync fsyncs them even
	// with no entry to append.
	idxUnsynced bool
	// txnDirty: entries were appended to the .txnindex file since the
	// last fsync (AppendTxnIndex); the segment's next sync fsyncs it.
	txnDirty bool
}

// openSegment opens (creating if absent) the segment at base. Its log file
// is registered with files, not held open; the index files are read whole
// and closed. Their contents are returned undecoded; the caller loads or
// rebuilds them.
func openSegment(fs vfs.FS, files *fileCache, dir string, base int64, create bool) (s *segment, idxBytes, timeBytes []byte, err error) {
	path := segmentPath(dir, base, logSuffix)
	s = &segment{base: base, dir: dir, fs: fs, next: base, maxTs: -1, maxTsOffset: -1}
	if create {
		f, err := files.openFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("create segment: %w", err)
		}
		s.log = files.file(path, f)
		// Empty index files with the segment, as Kafka creates them, so
		// that a segment that never gets an entry has nothing to write
		// when it is synced or closed. They need no fsync: an empty file
		// is durable with its directory entry, which the log's next
		// directory sync covers like the .log file's (dirDirty).
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if _, err := writeIndexFile(fs, segmentPath(dir, base, suf), nil, -1, false, false); err != nil {
				s.close()
				return nil, nil, nil, fmt.Errorf("create segment: %w", err)
			}
		}
		return s, nil, nil, nil
	}
	st, err := fs.Stat(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open segment: %w", err)
	}
	s.size = st.Size()
	s.log = files.file(path, nil)
	s.idxStale = true // until load adopts the files' contents
	if idxBytes, err = readIndexFile(files, segmentPath(dir, base, indexSuffix)); err != nil {
		s.close()
		return nil, nil, nil, err
	}
	if timeBytes, err = readIndexFile(files, segmentPath(dir, base, timeIndexSuffix)); err != nil {
		s.close()
		return nil, nil, nil, err
	}
	s.idxMissing = idxBytes == nil || timeBytes == nil
	return s, idxBytes, timeBytes, nil
}

// readIndexFile returns the contents of an index file, nil if it is
// absent. The descriptor is closed at once.
func readIndexFile(files *fileCache, path string) ([]byte, error) {
	f, err := files.openFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read index %s: %w", path, err)
	}
	return b, nil
}

// pin keeps the log file's descriptor open until unpin (the active
// segment), when the process's descriptor limit leaves room (pinAllowed);
// otherwise the descriptor is opened on demand through the cache.
func (s *segment) pin() error {
	if s.pinned || !pinAllowed(s.log.c.max) {
		return nil
	}
	if _, err := s.log.acquire(); err != nil {
		return fmt.Errorf("open segment %s: %w", s, err)
	}
	s.pinned = true
	pinnedFiles.Add(1)
	return nil
}

// unpin lets the cache close the log file's descriptor when idle.
func (s *segment) unpin() {
	if s.pinned {
		s.pinned = false
		pinnedFiles.Add(-1)
		s.log.release()
	}
}

// String names the segment for log lines and errors.
func (s *segment) String() string { return segmentPath(s.dir, s.base, logSuffix) }

// track accounts for a batch of size bytes written at pos, adding index
// entries as Kafka's LogSegment.append does: an offset entry (and a time
// entry if the max timestamp grew) once more than interval bytes were
// appended since the last entry.
func (s *segment) track(h records.Header, pos int64, size int, interval int32) {
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOffset = h.MaxTimestamp, h.LastOffset()
	}
	if s.bytesSinceIndex > int64(interval) {
		s.index = append(s.index, indexEntry{offset: h.LastOffset(), pos: int32(pos)})
		s.appendTimeEntry()
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(size)
	s.size = pos + int64(size)
	s.next = h.NextOffset()
}

// appendTimeEntry adds (maxTs, maxTsOffset) to times if it raises the largest
// indexed timestamp. It reports whether it did.
func (s *segment) appendTimeEntry() bool {
	if s.maxTs < 0 || (len(s.times) > 0 && s.maxTs <= s.times[len(s.times)-1].ts) {
		return false
	}
	s.times = append(s.times, timeEntry{ts: s.maxTs, offset: s.maxTsOffset})
	return true
}

// seal records the final largest timestamp in the time index, as Kafka does
// when a segment becomes inactive or is closed, so a reload knows it. The
// entry reaches the file at the next sync.
func (s *segment) seal() error {
	if s.appendTimeEntry() {
		s.dirty = true
	}
	return nil
}

// canHold reports whether offsets up to last fit as int32 relative offsets.
func (s *segment) canHold(last int64) bool {
	return last-s.base >= 0 && last-s.base <= math.MaxInt32
}

// writeIndexes marks both index files for a rewrite from the in-memory
// entries at the next sync.
func (s *segment) writeIndexes() error {
	s.idxStale = true
	s.dirty = true
	return nil
}

// indexWrite is what a sync writes to the index files: encoded entries at
// a file offset, or (at < 0) whole new contents. n is the entry count the
// file holds after the write.
type indexWrite struct {
	idx, times     []byte
	idxAt, timesAt int64
	nIdx, nTimes   int
	txn            bool // fsync the .txnindex file
	unsynced       bool // fsync both index files even with nothing to append
}

// pendingIndex describes the index entries not yet in the files. Callers
// hold the log's mu (or own s alone).
func (s *segment) pendingIndex() indexWrite {
	w := indexWrite{nIdx: len(s.index), nTimes: len(s.times), txn: s.txnDirty}
	s.txnDirty = false
	if s.idxStale || s.idxMissing {
		w.idxAt, w.timesAt = -1, -1
		w.idx = encodeOffsetEntries(nil, s.base, s.index)
		w.times = encodeTimeEntries(nil, s.base, s.times)
		return w
	}
	w.unsynced = s.idxUnsynced
	w.idxAt = int64(s.idxOnDisk) * offsetIndexEntrySize
	w.timesAt = int64(s.timesOnDisk) * timeIndexEntrySize
	w.idx = encodeOffsetEntries(nil, s.base, s.index[s.idxOnDisk:])
	w.times = encodeTimeEntries(nil, s.base, s.times[s.timesOnDisk:])
	return w
}

// syncFiles fsyncs the log file, then writes and fsyncs w to the time
// index and then the offset index files. created reports that an index file may have been created, so the
// directory needs an fsync. It takes no lock: callers hold the log's
// flushMu (or own s alone), so nothing but appends changes s meanwhile.
func (s *segment) syncFiles(w indexWrite) (created bool, err error) {
	if err := s.log.Sync(); err != nil {
		return false, fmt.Errorf("fsync %s: %w", s, err)
	}
	return s.writeIndexFiles(w, true)
}

// writeIndexFiles writes w to the time index and then the offset index
// files, fsyncing each (and the .txnindex if w.txn) if fsync is set.
func (s *segment) writeIndexFiles(w indexWrite, fsync bool) (created bool, err error) {
	// The time index first: then every batch before the last offset index
	// entry on disk is covered by the time index on disk, and load need
	// only scan after that entry (see segment.load).
	c1, err := writeIndexFile(s.fs, segmentPath(s.dir, s.base, timeIndexSuffix), w.times, w.timesAt, fsync, w.unsynced)
	if err != nil {
		return c1, err
	}
	c2, err := writeIndexFile(s.fs, segmentPath(s.dir, s.base, indexSuffix), w.idx, w.idxAt, fsync, w.unsynced)
	if err == nil && w.txn && fsync {
		err = syncFileIfExists(s.fs, segmentPath(s.dir, s.base, txnIndexSuffix))
	}
	return c1 || c2, err
}

// indexWritten records the outcome of syncFiles(w). Callers hold the log's mu.
func (s *segment) indexWritten(w indexWrite, err error) {
	if err != nil {
		s.idxStale = true
		s.txnDirty = s.txnDirty || w.txn
		return
	}
	s.idxStale, s.idxMissing, s.idxUnsynced = false, false, false
	s.idxOnDisk, s.timesOnDisk = w.nIdx, w.nTimes
}

// adoptIndexFiles keeps the index files a recovery found (idxB, timeB: their
// contents at open) instead of rewriting them, if they hold exactly the
// entries the rebuild derived from the batches. They may be only in the
// page cache, so the next sync fsyncs them (idxUnsynced). Callers own s
// alone (Log.load).
func (s *segment) adoptIndexFiles(idxB, timeB []byte) {
	if idxB == nil || timeB == nil ||
		!bytes.Equal(idxB, encodeOffsetEntries(nil, s.base, s.index)) ||
		!bytes.Equal(timeB, encodeTimeEntries(nil, s.base, s.times)) {
		return
	}
	s.idxStale, s.idxMissing, s.idxUnsynced = false, false, true
	s.idxOnDisk, s.timesOnDisk = len(s.index), len(s.times)
}

// writeIndexFile writes b at offset at of the index file path (at < 0:
// replaces its contents) and, if fsync is set, fsyncs it. Nothing to
// append is a no-op unless unsynced asks for the fsync anyway.
func writeIndexFile(fs vfs.FS, path string, b []byte, at int64, fsync, unsynced bool) (created bool, err error) {
	if at >= 0 && len(b) == 0 && !(fsync && unsynced) {
		return false, nil
	}
	flag := os.O_WRONLY | os.O_CREATE
	if at < 0 {
		flag |= os.O_TRUNC
	}
	f, err := fs.OpenFile(path, flag, 0o644)
	if err != nil {
		return true, fmt.Errorf("write index %s: %w", path, wrapOpenErr(err))
	}
	if len(b) > 0 {
		_, err = f.WriteAt(b, max(at, 0))
	}
	if err == nil && fsync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return true, fmt.Errorf("write index %s: %w", path, err)
	}
	return at <= 0, nil
}

// sync fsyncs the log file and writes and fsyncs the index files. Callers
// hold the log's flushMu and mu (or own s alone).
func (s *segment) sync() (created bool, err error) {
	w := s.pendingIndex()
	created, err = s.syncFiles(w)
	s.indexWritten(w, err)
	return created, err
}

// writeUnsynced writes the index entries not yet in the index files,
// fsyncing nothing: for a log closed by a Dir that then syncs its whole
// file system (Log.closeForSyncFS). Callers hold the log's flushMu and mu.
func (s *segment) writeUnsynced() error {
	w := s.pendingIndex()
	_, err := s.writeIndexFiles(w, false)
	s.indexWritten(w, err)
	return err
}

// close unpins and forgets the segment's log file.
func (s *segment) close() error {
	if s.log == nil {
		return nil
	}
	s.unpin()
	return s.log.close()
}

// DeletedFileSuffix marks a segment file renamed for deletion, as Kafka
// names them: deleted after FileDeleteDelayMs by its Dir's background
// goroutine, or by the next Open of its log.
const DeletedFileSuffix = ".deleted"

// segmentSuffixes are the files a segment may have.
var segmentSuffixes = []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix}

// retire closes the segment and renames its files with DeletedFileSuffix,
// returning the new paths: a rename is quick, where an unlink on a file
// system mounted with discard waits for the discard of the file's blocks.
func (s *segment) retire() ([]string, error) {
	err := s.close()
	var renamed []string
	for _, suf := range segmentSuffixes {
		p := segmentPath(s.dir, s.base, suf)
		switch e := s.fs.Rename(p, p+DeletedFileSuffix); {
		case e == nil:
			renamed = append(renamed, p+DeletedFileSuffix)
		case !errors.Is(e, os.ErrNotExist):
			err = errors.Join(err, e)
		}
	}
	if err != nil {
		return renamed, fmt.Errorf("retire segment %d: %w", s.base, err)
	}
	return renamed, nil
}

// remove closes the segment and deletes its files.
func (s *segment) remove() error {
	err := s.close()
	for _, suf := range segmentSuffixes {
		if e := s.fs.Remove(segmentPath(s.dir, s.base, suf)); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = errors.Join(err, e)
		}
	}
	if err != nil {
		return fmt.Errorf("remove segment %d: %w", s.base, err)
	}
	return nil
}

// segView is a reader's consistent copy of a segment's state, taken under
// the log's read lock. Bytes in [0,size) of f never change while the log's
// generation is unchanged.
type segView struct {
	base        int64
	f           *segFile
	size        int64
	next        int64
	index       []indexEntry
	times       []timeEntry
	maxTs       int64
	maxTsOffset int64
}

// view copies the reader-visible state. Callers hold the log's lock.
func (s *segment) view() segView {
	return segView{base: s.base, f: s.log, size: s.size, next: s.next, index: s.index,
		times: s.times, maxTs: s.maxTs, maxTsOffset: s.maxTsOffset}
}

// headerAt reads and parses the batch header at pos, checking the batch
// lies within the first size bytes.
func headerAt(f io.ReaderAt, pos, size int64) (records.Header, error) {
	var buf [records.HeaderSize]byte
	if size-pos < records.HeaderSize {
		return records.Header{}, records.ErrTruncated
	}
	if _, err := f.ReadAt(buf[:], pos); err != nil {
		return records.Header{}, fmt.Errorf("read batch header at %d: %w", pos, err)
	}
	h, err := records.ParseHeader(buf[:])
	if err != nil {
		return h, err
	}
	if int64(h.TotalSize()) > size-pos {
		return h, records.ErrTruncated
	}
	return h, nil
}
