package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage/vfs"
)

// Suffixes of the files a compaction writes, as Kafka's log cleaner: a
// cleaned segment is written as "<base>.log.cleaned" (with its indexes),
// renamed to ".swap" once complete and durable, then renamed over the
// segments it replaces. Open finishes an interrupted swap and discards
// ".cleaned" files.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// CleanerConfig holds the compaction settings of a log (topic configs).
type CleanerConfig struct {
	// DeleteRetentionMs is delete.retention.ms: a tombstone (a record with a
	// null value) is removed once its timestamp is this far in the past; a
	// transaction marker whose transaction has no data left gets a delete
	// horizon this far in the future and is removed once it passed (KIP-534).
	DeleteRetentionMs int64
	// MinCompactionLagMs is min.compaction.lag.ms: segments holding a record
	// younger than this are not compacted yet.
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms: a log whose oldest
	// uncompacted closed segment starts with a batch older than this is
	// compacted even below MinCleanableRatio (KIP-354). Zero or less: no limit.
	MaxCompactionLagMs int64
	// MinCleanableRatio is min.cleanable.dirty.ratio: a log is compacted only
	// once the share of never-compacted bytes among compactable bytes reaches it.
	MinCleanableRatio float64
	// MaxKeys bounds the distinct keys remembered per pass (Kafka's dedupe
	// buffer); the pass then covers only the segments whose keys fit. Zero
	// means DefaultCleanerMaxKeys.
	MaxKeys int
}

// DefaultCleanerMaxKeys is the default bound of CleanerConfig.MaxKeys.
const DefaultCleanerMaxKeys = 4 << 20

// CleanStats describes one compaction pass.
type CleanStats struct {
	Segments          int   // segments read and rewritten
	BytesBefore       int64 // their size
	BytesAfter        int64 // size of the segments that replaced them
	RecordsRemoved    int64 // superseded or keyless records dropped
	TombstonesRemoved int64 // expired tombstones dropped
	AbortedRemoved    int64 // records of aborted transactions dropped
	MarkersRemoved    int64 // transaction markers dropped
	FirstDirty        int64 // cleaner position after the pass
	// Forced is set when the pass ran below MinCleanableRatio because of
	// MaxCompactionLagMs.
	Forced bool
	// EmptiedAborts are aborted transactions whose data is all gone from the
	// log while their ABORT marker remains (until its delete horizon). A
	// read_committed fetch must stop listing them before the marker goes, as
	// Kafka drops them from the cleaned transaction index: a consumer told
	// of an aborted transaction whose marker it never sees would skip the
	// producer's later, committed batches.
	EmptiedAborts []AbortedTxn
}

// testHookCleanStage, if set, runs at each stage of a swap; an error stops
// Clean right there, leaving the files as a crash would.
var testHookCleanStage func(stage string) error

func cleanStage(stage string) error {
	if h := testHookCleanStage; h != nil {
		return h(stage)
	}
	return nil
}

// Clean compacts the log as Kafka's log cleaner does for cleanup.policy
// compact. The cleanable range is the closed segments below the first
// uncleanable offset: the smallest of the active segment's base, stableOffset
// (the caller's last stable offset, read before calling: no data of an
// undecided transaction, nor above the high watermark, is touched), the first
// offset of a transaction without marker, and the first segment holding a
// record younger than MinCompactionLagMs. A segment holding any offset at or
// beyond it is not cleaned.
//
// In the cleaned segments only the newest record of each key is kept (records
// of committed transactions count as any other); keyless records, expired
// tombstones and every record of an aborted transaction are dropped; a
// transaction marker goes once no batch of its transaction remains and its
// delete horizon passed (see txnFilter.marker). Offsets of kept records do
// not change, so the log gains gaps. A producer's last data batch and last
// batch are kept, empty if need be, so its sequence and epoch survive a
// reload (cleaner_txn.go).
//
// Nothing happens unless the dirty ratio reaches MinCleanableRatio or the
// oldest dirty segment is older than MaxCompactionLagMs. The rewritten
// segments are swapped in atomically: a crash at any point leaves either the
// old or the new segments (see completeSwaps).
func (l *Log) Clean(now time.Time, stableOffset int64, cc CleanerConfig) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if cc.MaxKeys <= 0 {
		cc.MaxKeys = DefaultCleanerMaxKeys
	}
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return CleanStats{}, ErrClosed
	}
	segs := append([]*segment(nil), l.mu.segments...)
	views := make([]segView, len(segs))
	for i, s := range segs {
		views[i] = s.view()
	}
	firstDirty := max(l.mu.firstDirty, l.mu.logStart)
	cfg := l.cfg
	l.mu.RUnlock()
	stats := CleanStats{FirstDirty: firstDirty}

	nowMs := now.UnixMilli()
	n := cleanableSegments(views, stableOffset, nowMs, cc.MinCompactionLagMs)
	if n == 0 {
		return stats, nil
	}
	var cleanBytes, dirtyBytes int64
	firstDirtyIdx := n
	for i := 0; i < n; i++ {
		if isDirty(views, i, firstDirty) {
			if firstDirtyIdx == n {
				firstDirtyIdx = i
			}
			dirtyBytes += views[i].size
		} else {
			cleanBytes += views[i].size
		}
	}
	if dirtyBytes == 0 {
		return stats, nil
	}
	if float64(dirtyBytes)/float64(dirtyBytes+cleanBytes) < cc.MinCleanableRatio {
		overdue, err := compactionOverdue(views, firstDirty, nowMs, cc.MaxCompactionLagMs)
		if err != nil {
			return stats, fmt.Errorf("clean %s: %w", l.dir, err)
		}
		if !overdue {
			return stats, nil
		}
		stats.Forced = true
	}

	// Producers and transactions over the whole log; an open transaction
	// bounds the range too.
	txns, err := scanTxns(views)
	if err != nil {
		return stats, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	if txns.open < stableOffset {
		n = min(n, cleanableSegments(views, txns.open, nowMs, cc.MinCompactionLagMs))
		if firstDirtyIdx >= n {
			return stats, nil
		}
	}

	// The offset map: the newest offset of each key in the dirty segments,
	// records of aborted transactions left out.
	latest := map[string]int64{}
	end := n // segments [0, end) are cleaned
	for i := firstDirtyIdx; i < n; i++ {
		if len(latest) >= cc.MaxKeys && i > firstDirtyIdx {
			end = i
			break
		}
		err := eachBatch(views[i], func(h records.Header, _ []byte, recs []records.Record) error {
			if h.IsControl() || (h.IsTransactional() && txns.isAborted(h.ProducerID, h.BaseOffset)) {
				return nil
			}
			for _, r := range recs {
				if r.Key != nil {
					latest[string(r.Key)] = h.BaseOffset + int64(r.OffsetDelta)
				}
			}
			return nil
		})
		if err != nil {
			return stats, fmt.Errorf("clean %s: %w", l.dir, err)
		}
	}
	endOffset := views[end].base
	keep := func(h records.Header, r records.Record) (bool, bool) {
		if r.Key == nil {
			return false, false
		}
		off := h.BaseOffset + int64(r.OffsetDelta)
		if newest, ok := latest[string(r.Key)]; ok && off < newest {
			return false, false
		}
		if r.Value == nil && recordTimestamp(h, r) < nowMs-cc.DeleteRetentionMs {
			return false, true
		}
		return true, false
	}
	tf := &txnFilter{txns: &txns, seen: map[int64]bool{}, nowMs: nowMs,
		horizon: addSaturating(nowMs, max(cc.DeleteRetentionMs, 0))}
	filter := func(h records.Header, raw []byte, recs []records.Record) ([]byte, error) {
		if h.IsControl() {
			if !h.IsTransactional() {
				return raw, nil
			}
			out, err := tf.marker(h, raw)
			if out == nil && err == nil {
				stats.MarkersRemoved++
			}
			return out, err
		}
		kept := recs[:0:0]
		if tf.data(h) {
			stats.AbortedRemoved += int64(len(recs))
		} else {
			for _, r := range recs {
				ok, tomb := keep(h, r)
				switch {
				case ok:
					kept = append(kept, r)
				case tomb:
					stats.TombstonesRemoved++
				default:
					stats.RecordsRemoved++
				}
			}
		}
		switch {
		case len(kept) == len(recs):
			return raw, nil
		case len(kept) == 0 && !txns.retainedForProducer(h):
			return nil, nil
		}
		return rebuildBatch(h, kept)
	}

	for _, g := range groupSegments(views[:end], cfg.SegmentBytes) {
		group := segs[g[0]:g[1]]
		nextBase := views[g[1]].base
		ns, written, err := l.writeCleaned(views[g[0]:g[1]], nextBase, cfg.IndexIntervalBytes, filter)
		if err != nil {
			return stats, fmt.Errorf("clean %s: %w", l.dir, err)
		}
		if ns == nil {
			continue // another operation changed the log; try next time
		}
		if err := l.swapIn(group, ns); err != nil {
			return stats, fmt.Errorf("clean %s: %w", l.dir, err)
		}
		stats.Segments += len(group)
		for _, v := range views[g[0]:g[1]] {
			stats.BytesBefore += v.size
		}
		stats.BytesAfter += written
	}
	stats.EmptiedAborts = tf.emptied
	l.mu.Lock()
	l.mu.firstDirty = max(l.mu.firstDirty, endOffset)
	stats.FirstDirty = max(l.mu.firstDirty, l.mu.logStart)
	l.mu.Unlock()
	if stats.Segments > 0 {
		l.logger.Info("compacted log", "segments", stats.Segments, "bytes_before", stats.BytesBefore,
			"bytes_after", stats.BytesAfter, "records_removed", stats.RecordsRemoved,
			"tombstones_removed", stats.TombstonesRemoved, "aborted_removed", stats.AbortedRemoved,
			"markers_removed", stats.MarkersRemoved, "forced_by_max_lag", stats.Forced,
			"first_dirty_offset", stats.FirstDirty)
	}
	return stats, nil
}

// cleanableSegments is how many leading closed segments lie wholly below
// bound and hold no record younger than minLagMs before nowMs.
func cleanableSegments(views []segView, bound, nowMs, minLagMs int64) int {
	n := len(views) - 1
	for i := 0; i < n; i++ {
		if views[i+1].base > bound || (minLagMs > 0 && views[i].maxTs > nowMs-minLagMs) {
			return i
		}
	}
	return n
}

// isDirty reports whether segment i holds offsets at or after firstDirty.
func isDirty(views []segView, i int, firstDirty int64) bool {
	return views[i].base >= firstDirty || (i+1 < len(views) && views[i+1].base > firstDirty)
}

// compactionOverdue reports whether a dirty closed segment starts with a
// batch whose max timestamp is more than maxLagMs before nowMs, as Kafka's
// LogCleanerManager.maxCompactionDelay (timestamps <= 0 are ignored).
func compactionOverdue(views []segView, firstDirty, nowMs, maxLagMs int64) (bool, error) {
	if maxLagMs <= 0 {
		return false, nil
	}
	for i := 0; i < len(views)-1; i++ {
		if !isDirty(views, i, firstDirty) || views[i].size == 0 {
			continue
		}
		h, err := headerAt(views[i].f, 0, views[i].size)
		if err != nil {
			return false, fmt.Errorf("segment %d: %w", views[i].base, err)
		}
		if h.MaxTimestamp > 0 && h.MaxTimestamp < nowMs-maxLagMs {
			return true, nil
		}
	}
	return false, nil
}

// groupSegments splits views into runs [from, to) that fit one segment of
// maxBytes with offsets relative to the first base fitting an int32, as
// Kafka's groupSegmentsBySize, so compaction merges small segments.
func groupSegments(views []segView, maxBytes int64) [][2]int {
	var out [][2]int
	for i := 0; i < len(views); {
		j, size := i+1, views[i].size
		for j < len(views) && size+views[j].size <= maxBytes &&
			views[j].next-1-views[i].base <= math.MaxInt32 {
			size += views[j].size
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// eachBatch decodes every batch of a segment view in order.
func eachBatch(v segView, fn func(h records.Header, raw []byte, recs []records.Record) error) error {
	br := bufio.NewReaderSize(io.NewSectionReader(v.f, 0, v.size), scanBufSize)
	var buf []byte
	for pos := int64(0); pos < v.size; {
		if _, err := readBatch(br, &buf, v.size-pos); err != nil {
			return fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
		}
		h, recs, err := records.DecodeRecords(buf[:cap(buf)])
		if err != nil {
			return fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
		}
		raw := buf[:h.TotalSize()]
		if err := fn(h, raw, recs); err != nil {
			return err
		}
		pos += int64(h.TotalSize())
	}
	return nil
}

// writeCleaned writes the compacted copy of the segments in vs as the
// segment "<vs[0].base>.log.swap" (with indexes) and returns it, not yet
// opened, tracked as the in-memory state of the new segment, and its size.
// filter returns the bytes to write for each batch, nil to drop it.
func (l *Log) writeCleaned(vs []segView, nextBase int64, interval int32,
	filter func(records.Header, []byte, []records.Record) ([]byte, error)) (*segment, int64, error) {
	base := vs[0].base
	ns := &segment{base: base, dir: l.dir, next: base, maxTs: -1, maxTsOffset: -1}
	paths := map[string]string{}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		paths[suf] = segmentPath(l.dir, base, suf)
	}
	f, err := l.fs.OpenFile(paths[logSuffix]+cleanedSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, 0, err
	}
	discard := func() {
		f.Close()
		for _, p := range paths {
			_ = l.fs.Remove(p + cleanedSuffix)
		}
	}
	w := bufio.NewWriterSize(f, scanBufSize)
	pos := int64(0)
	for _, v := range vs {
		err := eachBatch(v, func(h records.Header, raw []byte, recs []records.Record) error {
			out, err := filter(h, raw, recs)
			if err != nil || out == nil {
				return err
			}
			if _, err := w.Write(out); err != nil {
				return err
			}
			hh, _ := records.ParseHeader(out)
			ns.track(hh, pos, len(out), interval)
			pos += int64(len(out))
			return nil
		})
		if err != nil {
			discard()
			return nil, 0, err
		}
	}
	ns.appendTimeEntry()
	ns.next = nextBase
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = vfs.WriteFileSynced(l.fs, paths[indexSuffix]+cleanedSuffix, encodeOffsetEntries(nil, base, ns.index), 0o644)
	}
	if err == nil {
		err = vfs.WriteFileSynced(l.fs, paths[timeIndexSuffix]+cleanedSuffix, encodeTimeEntries(nil, base, ns.times), 0o644)
	}
	if err != nil {
		discard()
		return nil, 0, err
	}
	ns.size = pos
	// Complete and durable: make it a swap file. The log's suffix goes last
	// so that a ".log.swap" implies complete ".index/.timeindex.swap" files.
	for _, suf := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
		if err == nil {
			err = l.fs.Rename(paths[suf]+cleanedSuffix, paths[suf]+swapSuffix)
		}
	}
	if err == nil {
		err = vfs.SyncDir(l.fs, l.dir)
	}
	if err != nil {
		discard()
		for _, p := range paths {
			_ = l.fs.Remove(p + swapSuffix)
		}
		return nil, 0, err
	}
	return ns, pos, nil
}

// rebuildBatch re-encodes the batch with header h holding only recs (a
// non-empty or, for a producer's last batch, empty subset), in the same
// codec, keeping base offset, producer fields and last offset delta.
func rebuildBatch(h records.Header, recs []records.Record) ([]byte, error) {
	spec := records.BatchSpec{
		BaseOffset: h.BaseOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Attributes:     h.Attributes &^ 0x07,
		FirstTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		Codec: h.Compression(),
	}
	if len(recs) == 0 {
		spec.Codec = records.CodecNone
	}
	b, err := records.Build(spec, recs)
	if err != nil {
		return nil, err
	}
	// Keep the original last offset delta, as Kafka does, so the batch still
	// covers its offsets and the producer's last sequence is unchanged.
	const offCRC, offAttributes, offLastOffsetDelta = 17, 21, 23
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b, nil
}

// swapIn replaces the segments of group (contiguous, in the log) with ns,
// whose files are "<base>.*.swap". If the log changed since the group was
// read (retention, truncation), the swap files are discarded instead.
func (l *Log) swapIn(group []*segment, ns *segment) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	discard := func() {
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			_ = l.fs.Remove(segmentPath(l.dir, ns.base, suf) + swapSuffix)
		}
	}
	at := -1
	for i, s := range l.mu.segments {
		if s == group[0] {
			at = i
			break
		}
	}
	if l.mu.closed || at < 0 || at+len(group) >= len(l.mu.segments) {
		discard()
		return nil
	}
	for j, s := range group {
		if l.mu.segments[at+j] != s {
			discard()
			return nil
		}
	}
	l.mu.gen++
	l.mu.dirDirty = true
	if err := replaceWithSwap(l.fs, l.dir, ns.base, group[1:], group[0]); err != nil {
		return err
	}
	s, _, _, err := openSegment(l.fs, l.files, l.dir, ns.base, false)
	if err != nil {
		return err
	}
	s.size, s.next, s.index, s.times = ns.size, ns.next, ns.index, ns.times
	s.idxOnDisk, s.timesOnDisk, s.idxStale = len(ns.index), len(ns.times), false
	s.maxTs, s.maxTsOffset = ns.maxTs, ns.maxTsOffset
	segs := make([]*segment, 0, len(l.mu.segments)-len(group)+1)
	segs = append(segs, l.mu.segments[:at]...)
	segs = append(segs, s)
	segs = append(segs, l.mu.segments[at+len(group):]...)
	l.mu.segments = segs
	return nil
}

// replaceWithSwap moves the swap files of the segment at base into place:
// its indexes, then the segments replaced (later ones deleted), then its
// log file, renamed over the first replaced segment's. first, if not nil,
// is closed before. Each step leaves a state completeSwaps can finish.
func replaceWithSwap(fs vfs.FS, dir string, base int64, later []*segment, first *segment) error {
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		p := segmentPath(dir, base, suf)
		if err := fs.Rename(p+swapSuffix, p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := cleanStage("indexes-swapped"); err != nil {
		return err
	}
	for _, s := range later {
		if err := s.remove(); err != nil {
			return err
		}
	}
	if err := cleanStage("old-removed"); err != nil {
		return err
	}
	if first != nil {
		_ = first.close()
	}
	p := segmentPath(dir, base, logSuffix)
	if err := fs.Rename(p+swapSuffix, p); err != nil {
		return err
	}
	if err := cleanStage("log-swapped"); err != nil {
		return err
	}
	return vfs.SyncDir(fs, dir)
}

// completeSwaps runs when a log is opened: it deletes ".cleaned" files (a
// compaction interrupted before its output was complete) and finishes every
// swap whose ".log.swap" exists, deleting the segments it replaces (those
// with a base inside its offset range) and renaming it into place. Index
// ".swap" files without a log swap are left-overs and are deleted. ents is
// the log directory's listing; changed reports that it is out of date.
func (l *Log) completeSwaps(ents []fs.DirEntry) (changed bool, err error) {
	var logSwaps []int64
	var indexSwaps []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			l.logger.Warn("removing file of an interrupted compaction", "file", name)
			changed = true
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return changed, err
			}
		case strings.HasSuffix(name, swapSuffix):
			stem := strings.TrimSuffix(name, swapSuffix)
			if b, ok := parseSegmentName(stem, logSuffix); ok {
				logSwaps = append(logSwaps, b)
			} else {
				indexSwaps = append(indexSwaps, name)
			}
		}
	}
	for _, base := range logSwaps {
		end, err := swapEnd(l.fs, segmentPath(l.dir, base, logSuffix)+swapSuffix)
		if err != nil {
			return changed, fmt.Errorf("interrupted compaction swap at %d: %w", base, err)
		}
		var later []*segment
		for _, e := range ents {
			if b, ok := parseSegmentName(e.Name(), logSuffix); ok && b > base && b < end {
				later = append(later, &segment{base: b, dir: l.dir, fs: l.fs})
			}
		}
		l.logger.Warn("completing interrupted compaction swap", "segment", base, "replaces", len(later)+1)
		changed = true
		if err := replaceWithSwap(l.fs, l.dir, base, later, nil); err != nil {
			return changed, err
		}
	}
	for _, name := range indexSwaps {
		if _, err := l.fs.Stat(filepath.Join(l.dir, name)); err == nil {
			l.logger.Warn("removing stray index swap file", "file", name)
			changed = true
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil {
				return changed, err
			}
		}
	}
	return changed, nil
}

// swapEnd returns the offset after the last batch of a complete swap file;
// its base if it is empty.
func swapEnd(fs vfs.FS, path string) (int64, error) {
	f, err := vfs.Open(fs, path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := int64(-1)
	for pos := int64(0); pos < st.Size(); {
		h, err := headerAt(f, pos, st.Size())
		if err != nil {
			return 0, err
		}
		end = h.NextOffset()
		pos += int64(h.TotalSize())
	}
	if end < 0 {
		base, _ := parseSegmentName(strings.TrimSuffix(filepath.Base(path), swapSuffix), logSuffix)
		return base + 1, nil
	}
	return end, nil
}
