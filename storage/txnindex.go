package storage

// Kafka's transaction index: "<20-digit base offset>.txnindex" beside a
// segment lists the aborted transactions whose ABORT marker lies in that
// segment (Kafka's TransactionIndex and AbortedTxn), 34 bytes each:
//
//	version            int16  0
//	producer_id        int64
//	first_offset       int64  first offset of the transaction's data
//	last_offset        int64  offset of the ABORT marker
//	last_stable_offset int64  the partition's LSO once the marker was written
//
// Kafka appends an entry when it writes the marker and creates the file
// only then, so most segments have none; kbroker does the same
// (AppendTxnIndex, fsynced with the segment) and drops entries on
// truncation. It also keeps the aborted list in memory (broker/replica) and
// rewrites the files from it before every producer snapshot
// (WriteTxnIndexes), so that the files are whole whenever a snapshot relies
// on them: a log loaded from a snapshot at offset S takes the aborted
// transactions with markers below S from the files (TxnIndex) and replays
// the log from S for the rest. Kafka 3.9 opening the dir reads the same
// files. (Compaction removes the files of the segments it merges away; the
// transactions they listed had their data cleaned with them, and the next
// snapshot writes the survivors' entries again.)

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/kbroker/kbroker/storage/vfs"
)

// txnIndexSuffix names a segment's transaction index, as Kafka.
const txnIndexSuffix = ".txnindex"

const (
	txnIndexVersion   = 0
	txnIndexEntrySize = 2 + 8 + 8 + 8 + 8
)

// ErrCorruptTxnIndex reports a .txnindex file that is not Kafka's format or
// names a marker outside its segment.
var ErrCorruptTxnIndex = errors.New("corrupt transaction index")

// TxnIndexEntry is one aborted transaction of Kafka's transaction index.
type TxnIndexEntry struct {
	ProducerID  int64
	FirstOffset int64
	// LastOffset is the offset of the ABORT marker.
	LastOffset int64
	// LastStableOffset is the partition's LSO just after the marker;
	// Kafka's fetch stops searching later segments once an entry's LSO
	// passes the fetch's upper bound, so a smaller value is always safe.
	LastStableOffset int64
}

// EncodeTxnIndex returns entries in Kafka's .txnindex format.
func EncodeTxnIndex(entries []TxnIndexEntry) []byte {
	b := make([]byte, 0, len(entries)*txnIndexEntrySize)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint16(b, txnIndexVersion)
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(e.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastStableOffset))
	}
	return b
}

// DecodeTxnIndex parses a .txnindex file of the segment at base. Errors
// wrap ErrCorruptTxnIndex: a partial entry, an unknown version, or a
// marker below base (Kafka's TransactionIndex.sanityCheck).
func DecodeTxnIndex(b []byte, base int64) ([]TxnIndexEntry, error) {
	if len(b)%txnIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: %d bytes, not a multiple of %d", ErrCorruptTxnIndex, len(b), txnIndexEntrySize)
	}
	out := make([]TxnIndexEntry, 0, len(b)/txnIndexEntrySize)
	for ; len(b) > 0; b = b[txnIndexEntrySize:] {
		if v := binary.BigEndian.Uint16(b); v != txnIndexVersion {
			return nil, fmt.Errorf("%w: entry version %d", ErrCorruptTxnIndex, v)
		}
		e := TxnIndexEntry{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if e.LastOffset < base || e.FirstOffset > e.LastOffset {
			return nil, fmt.Errorf("%w: entry %+v in the segment at %d", ErrCorruptTxnIndex, e, base)
		}
		out = append(out, e)
	}
	return out, nil
}

// TxnIndex returns the aborted transactions of the .txnindex files of the
// log's segments with a marker below upTo, sorted by marker offset. A
// segment without a file has none. A file that cannot be read or parsed is
// an error (the caller rebuilds the list from the log).
func (l *Log) TxnIndex(upTo int64) ([]TxnIndexEntry, error) {
	l.mu.RLock()
	bases := make([]int64, len(l.mu.segments))
	for i, s := range l.mu.segments {
		bases[i] = s.base
	}
	l.mu.RUnlock()
	var out []TxnIndexEntry
	for _, base := range bases {
		if base >= upTo {
			break
		}
		path := segmentPath(l.dir, base, txnIndexSuffix)
		b, err := vfs.ReadFile(l.fs, path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		ents, err := DecodeTxnIndex(b, base)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		for _, e := range ents {
			if e.LastOffset < upTo {
				out = append(out, e)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastOffset < out[j].LastOffset })
	return out, nil
}

// WriteTxnIndexes makes the .txnindex file of every segment list exactly
// the entries of aborted whose marker lies in it: a file whose content
// differs is replaced atomically, a segment with no entry loses its file.
// Entries whose marker is outside the log are left out. When a file
// changed, the directory is fsynced before returning, so that a snapshot
// written next never becomes durable without the files it relies on.
func (l *Log) WriteTxnIndexes(aborted []TxnIndexEntry) error {
	l.mu.RLock()
	bases := make([]int64, len(l.mu.segments))
	for i, s := range l.mu.segments {
		bases[i] = s.base
	}
	l.mu.RUnlock()
	per := make(map[int64][]TxnIndexEntry)
	for _, e := range aborted {
		i := sort.Search(len(bases), func(i int) bool { return bases[i] > e.LastOffset }) - 1
		if i < 0 {
			continue // below the log start: its segment is gone
		}
		per[bases[i]] = append(per[bases[i]], e)
	}
	var errs error
	changed := false
	for _, base := range bases {
		path := segmentPath(l.dir, base, txnIndexSuffix)
		old, err := vfs.ReadFile(l.fs, path)
		exists := err == nil
		ents := per[base]
		if len(ents) == 0 {
			if exists {
				if err := l.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = errors.Join(errs, fmt.Errorf("removing %s: %w", path, err))
				}
				changed = true
			}
			continue
		}
		sort.SliceStable(ents, func(i, j int) bool { return ents[i].LastOffset < ents[j].LastOffset })
		b := EncodeTxnIndex(ents)
		if exists && bytes.Equal(old, b) {
			continue
		}
		if err := vfs.WriteFileSynced(l.fs, path+".tmp", b, 0o644); err != nil {
			_ = l.fs.Remove(path + ".tmp")
			errs = errors.Join(errs, fmt.Errorf("writing %s: %w", path, err))
			continue
		}
		if err := l.fs.Rename(path+".tmp", path); err != nil {
			errs = errors.Join(errs, fmt.Errorf("installing %s: %w", path, err))
			continue
		}
		changed = true
	}
	if changed && errs == nil {
		errs = vfs.SyncDir(l.fs, l.dir)
	}
	return errs
}

// AppendTxnIndex adds an aborted transaction to the .txnindex file of the
// segment holding its marker (the active one, when called as the marker is
// written), as Kafka does, creating the file if needed. The file is
// fsynced with the segment (Flush, a roll), so that the files are whole
// below the recovery point for a broker that opens the dir after a crash.
// A marker outside the log is an error.
func (l *Log) AppendTxnIndex(e TxnIndexEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.offline != nil {
		return fmt.Errorf("append to the transaction index of %s: %w", l.dir, l.mu.offline)
	}
	if e.LastOffset < l.mu.segments[0].base || e.LastOffset >= l.mu.leo {
		return fmt.Errorf("txnindex entry %+v outside the log [%d, %d)", e, l.mu.segments[0].base, l.mu.leo)
	}
	s := l.mu.segments[l.segmentIndex(e.LastOffset)]
	path := segmentPath(l.dir, s.base, txnIndexSuffix)
	f, err := l.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, wrapOpenErr(err))
	}
	_, err = f.Write(EncodeTxnIndex([]TxnIndexEntry{e}))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	s.txnDirty = true
	s.dirty = true
	l.mu.dirDirty = true
	return nil
}

// syncFileIfExists fsyncs the file at path (a transaction index, a
// producer snapshot), if it exists.
func syncFileIfExists(fs vfs.FS, path string) error {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, wrapOpenErr(err))
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// truncateTxnIndexLocked drops the entries of s's transaction index whose
// marker is at or after end (the new log end), as Kafka's
// TransactionIndex.truncateTo. An unreadable file is removed: the caller's
// next producer snapshot writes it again from the partition's state. l.mu
// must be held.
func (l *Log) truncateTxnIndexLocked(s *segment, end int64) error {
	path := segmentPath(l.dir, s.base, txnIndexSuffix)
	b, err := vfs.ReadFile(l.fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	ents, err := DecodeTxnIndex(b, s.base)
	if err != nil {
		l.logger.Warn("removing unreadable transaction index at truncation; the next producer snapshot rewrites it", "file", path, "err", err)
		return l.fs.Remove(path)
	}
	keep := 0
	for keep < len(ents) && ents[keep].LastOffset < end {
		keep++
	}
	switch {
	case keep == len(ents):
		return nil
	case keep == 0:
		return l.fs.Remove(path)
	}
	if err := vfs.WriteFileAtomic(l.fs, path, EncodeTxnIndex(ents[:keep]), 0o644); err != nil {
		return fmt.Errorf("truncate %s: %w", path, err)
	}
	return nil
}
