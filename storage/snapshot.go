package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kbroker/kbroker/storage/vfs"
)

// SnapshotSuffix names producer-state snapshot files: <20-digit offset>.snapshot,
// beside the segments, as Kafka names them. The offset is the log end offset
// the snapshot's state covers: replaying the log from it rebuilds the rest.
const SnapshotSuffix = ".snapshot"

// snapshotsKept is how many snapshots stay on disk after a new one is written.
const snapshotsKept = 2

var snapshotCRC = crc32.MakeTable(crc32.Castagnoli)

// ProducerSnapshot is a producer-state snapshot read back from disk.
type ProducerSnapshot struct {
	// Offset is the log end offset the snapshot's state covers.
	Offset int64
	// Producers is the state in Kafka's format (nil when Legacy is set).
	Producers []ProducerSnapshotEntry
	// Legacy is the body of a snapshot in the format kbroker wrote before
	// it wrote Kafka's (a 4-byte CRC-32C, then a JSON document), kept
	// readable so that an upgrade keeps the state; nil otherwise.
	Legacy []byte
}

// WriteProducerSnapshot stores the producer state as of offset in Kafka's
// snapshot format (EncodeProducerSnapshot): written to a temporary file,
// fsynced and renamed into place; the rename is made durable by the log's
// next flush or close. Older snapshots beyond the newest snapshotsKept are
// removed. A caller with aborted transactions writes their transaction
// indexes first (WriteTxnIndexes): a snapshot in Kafka's format relies on
// them for the transactions aborted below its offset.
func (l *Log) WriteProducerSnapshot(offset int64, producers []ProducerSnapshotEntry) error {
	return l.writeProducerSnapshot(offset, producers, true)
}

// WriteProducerSnapshotDeferred is WriteProducerSnapshot for the snapshot
// an append takes every so many bytes, under its partition's lock: the
// file is written and renamed into place, and its fsync and the removal of
// the older snapshots are left to the Dir's background goroutine
// (syncDeferredSnapshots), as Kafka flushes the snapshot of a roll after
// it (KAFKA-15046). An fsync there waits behind every dirty page of the
// disk, and an unlink on a file system mounted with discard waits for
// the discard: traced at up to hundreds of milliseconds with the disk
// busy, during which the partition's appends and its follower's fetches
// waited. Until that sync a crash may lose or tear the new snapshot,
// which costs what a lost snapshot costs (LatestProducerSnapshot falls
// back to the older ones, kept until then, or the log start). A log
// outside a Dir writes the snapshot as WriteProducerSnapshot does.
func (l *Log) WriteProducerSnapshotDeferred(offset int64, producers []ProducerSnapshotEntry) error {
	l.mu.Lock()
	hook := l.mu.snapshotSync
	l.mu.Unlock()
	if hook == nil {
		return l.writeProducerSnapshot(offset, producers, true)
	}
	if wrote, err := l.installProducerSnapshot(offset, producers, false); err != nil || !wrote {
		return err
	}
	l.mu.Lock()
	l.mu.unsyncedSnapshots = append(l.mu.unsyncedSnapshots, offset)
	l.mu.Unlock()
	hook()
	return nil
}

// syncDeferredSnapshots fsyncs the snapshots WriteProducerSnapshotDeferred
// put in place, then removes the snapshots beyond the newest
// snapshotsKept. A snapshot removed meanwhile (a truncation below it, the
// log deleted) is skipped.
func (l *Log) syncDeferredSnapshots() error {
	l.mu.Lock()
	offs := l.mu.unsyncedSnapshots
	l.mu.unsyncedSnapshots = nil
	l.mu.Unlock()
	if len(offs) == 0 {
		return nil
	}
	var errs error
	for _, off := range offs {
		if err := syncFileIfExists(l.fs, l.snapshotPath(off)); err != nil {
			errs = errors.Join(errs, fmt.Errorf("syncing producer snapshot: %w", err))
		}
	}
	if errs != nil {
		return errs // keep the older snapshots: the new ones may not be durable
	}
	l.pruneSnapshots()
	return nil
}

// WriteProducerSnapshotAtClose is WriteProducerSnapshot for the snapshot
// a shutdown writes just before the log's Dir closes. When that Close
// makes the whole file system durable at once (vfs.CanSyncFS, see
// Dir.Close), the snapshot is not fsynced on its own: until that sync it
// may be lost or torn by a crash, which costs what a lost snapshot costs
// (LatestProducerSnapshot falls back to an older one, or the log start,
// and the state is rebuilt from the log after it), and a crash then
// leaves no clean shutdown marker either.
func (l *Log) WriteProducerSnapshotAtClose(offset int64, producers []ProducerSnapshotEntry) error {
	return l.writeProducerSnapshot(offset, producers, !l.config().closeSyncsFS)
}

// writeProducerSnapshot is WriteProducerSnapshot, fsyncing the snapshot
// before it is renamed into place only if fsync is set.
func (l *Log) writeProducerSnapshot(offset int64, producers []ProducerSnapshotEntry, fsync bool) error {
	if wrote, err := l.installProducerSnapshot(offset, producers, fsync); err != nil || !wrote {
		return err
	}
	l.pruneSnapshots()
	return nil
}

// installProducerSnapshot writes the snapshot at offset to a temporary
// file, fsynced if fsync is set, and renames it into place; wrote is
// false if an identical snapshot was already there. The rename
// becomes durable with the directory at the log's next flush or close:
// until then a crash finds an older snapshot (or none) and replays more of
// the log, which is all a snapshot saves. (One fsync less for every
// partition at shutdown.)
func (l *Log) installProducerSnapshot(offset int64, producers []ProducerSnapshotEntry, fsync bool) (wrote bool, err error) {
	name := l.snapshotPath(offset)
	buf := EncodeProducerSnapshot(producers)
	if old, err := vfs.ReadFile(l.fs, name); err == nil && bytes.Equal(old, buf) {
		// Already there (a restart with no appends since): a clean
		// shutdown of many partitions skips two fsyncs for each.
		return false, nil
	}
	l.mu.Lock()
	l.mu.listedSnapshots = nil // out of date from here on
	l.mu.Unlock()
	tmp := name + ".tmp"
	write := vfs.WriteFileSynced
	if !fsync {
		write = vfs.WriteFile
	}
	if err := write(l.fs, tmp, buf, 0o644); err != nil {
		_ = l.fs.Remove(tmp)
		return false, fmt.Errorf("writing producer snapshot: %w", err)
	}
	if err := l.fs.Rename(tmp, name); err != nil {
		return false, fmt.Errorf("installing producer snapshot: %w", err)
	}
	l.mu.Lock()
	l.mu.dirDirty = true
	l.mu.Unlock()
	return true, nil
}

// pruneSnapshots removes the snapshots beyond the newest snapshotsKept;
// the removals become durable with the directory as the rename does.
func (l *Log) pruneSnapshots() {
	offs, _ := l.snapshotOffsets()
	removed := false
	for i := 0; i+snapshotsKept < len(offs); i++ {
		removed = l.fs.Remove(l.snapshotPath(offs[i])) == nil || removed
	}
	l.mu.Lock()
	l.mu.listedSnapshots = nil
	l.mu.dirDirty = l.mu.dirDirty || removed
	l.mu.Unlock()
}

// LatestProducerSnapshot returns the newest readable snapshot taken at an
// offset no greater than maxOffset (the recovered log end), in Kafka's
// format or kbroker's legacy one. Snapshots beyond maxOffset describe a log
// that was truncated and are deleted. A snapshot that cannot be read, fails
// its CRC or does not parse is deleted with one log line: the caller then
// uses an older snapshot or none, and rebuilds the state from the log after
// it, so nothing the snapshot held is lost.
func (l *Log) LatestProducerSnapshot(maxOffset int64) (ProducerSnapshot, bool) {
	offs, err := l.snapshotOffsets()
	if err != nil {
		l.logger.Warn("cannot list producer snapshots; producer state is rebuilt from the whole log", "err", err)
		return ProducerSnapshot{}, false
	}
	for i := len(offs) - 1; i >= 0; i-- {
		path := l.snapshotPath(offs[i])
		if offs[i] > maxOffset {
			_ = l.fs.Remove(path)
			continue
		}
		b, err := vfs.ReadFile(l.fs, path)
		if err == nil {
			var ps ProducerSnapshot
			if ps, err = decodeSnapshotFile(b); err == nil {
				ps.Offset = offs[i]
				return ps, true
			}
		}
		older := "the log start"
		if i > 0 {
			older = fmt.Sprintf("the snapshot at offset %d", offs[i-1])
		}
		l.logger.Warn("unreadable producer snapshot removed; producer state is rebuilt from the log from "+older,
			"file", path, "err", err)
		_ = l.fs.Remove(path)
	}
	return ProducerSnapshot{}, false
}

// decodeSnapshotFile parses a snapshot file in Kafka's format, or else in
// kbroker's legacy format (a CRC-32C of the rest, then a JSON object).
func decodeSnapshotFile(b []byte) (ProducerSnapshot, error) {
	producers, err := DecodeProducerSnapshot(b)
	if err == nil {
		return ProducerSnapshot{Producers: producers}, nil
	}
	if len(b) > 4 && b[4] == '{' && binary.BigEndian.Uint32(b) == crc32.Checksum(b[4:], snapshotCRC) {
		return ProducerSnapshot{Legacy: b[4:]}, nil
	}
	return ProducerSnapshot{}, err
}

func (l *Log) snapshotPath(offset int64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%020d%s", offset, SnapshotSuffix))
}

// snapshotOffsets lists the offsets of the snapshot files, ascending.
func (l *Log) snapshotOffsets() ([]int64, error) {
	l.mu.Lock()
	offs := l.mu.listedSnapshots
	l.mu.listedSnapshots = nil
	l.mu.Unlock()
	if offs != nil {
		return offs, nil
	}
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return listSnapshots(ents), nil
}

// snapshotsAtOpen keeps the snapshot offsets of Open's listing for the
// first snapshotOffsets call (the partition loading its producer state).
func (l *Log) snapshotsAtOpen(ents []fs.DirEntry) {
	offs := listSnapshots(ents)
	if offs == nil {
		offs = []int64{} // listed, none
	}
	l.mu.listedSnapshots = offs
}

// listSnapshots returns the offsets of the producer snapshots in a
// directory listing, sorted.
func listSnapshots(ents []fs.DirEntry) []int64 {
	var offs []int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, SnapshotSuffix) {
			continue
		}
		off, err := strconv.ParseInt(strings.TrimSuffix(name, SnapshotSuffix), 10, 64)
		if err == nil && off >= 0 {
			offs = append(offs, off)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs
}
