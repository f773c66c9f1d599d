package storage

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kbroker/kbroker/storage/vfs"
)

// EpochEntry says that leader epoch Epoch wrote its first record at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// Kafka's sentinels for an unknown epoch and offset (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// epochCache is Kafka's LeaderEpochFileCache: the start offset of each
// leader epoch seen in the log, persisted in leader-epoch-checkpoint.
// Invariant: entries are strictly increasing in both Epoch and StartOffset.
type epochCache struct {
	fs      vfs.FS
	path    string
	entries []EpochEntry
	// unwritten: the newest entry was assigned (persistLater) but not
	// written, since no record follows it yet. The Log writes it before
	// it appends a record (see Log.AssignEpoch).
	unwritten bool
}

// loadEpochCache reads dir's leader-epoch-checkpoint (absent means empty).
// Entries that break the ordering invariant are an error.
func loadEpochCache(fs vfs.FS, dir string) (epochCache, error) {
	c := epochCache{fs: fs, path: filepath.Join(dir, LeaderEpochCheckpointFile)}
	lines, err := readCheckpointFS(fs, c.path, 2)
	if err != nil {
		return c, err
	}
	for _, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return c, fmt.Errorf("read %s: bad entry %q", c.path, strings.Join(f, " "))
		}
		ent := EpochEntry{Epoch: int32(e), StartOffset: o}
		if n := len(c.entries); n > 0 && (ent.Epoch <= c.entries[n-1].Epoch || ent.StartOffset < c.entries[n-1].StartOffset) {
			return c, fmt.Errorf("read %s: entry %v not after %v", c.path, ent, c.entries[n-1])
		}
		c.entries = append(c.entries, ent)
	}
	return c, nil
}

// persist writes the cache to its checkpoint file atomically and durably.
func (c *epochCache) persist() error {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	if err := writeCheckpointFS(c.fs, c.path, lines); err != nil {
		return err
	}
	c.unwritten = false
	return nil
}

// persistLater marks the cache as changed but not written (unwritten):
// persist, or writeIfUnwritten before the next record, writes it.
func (c *epochCache) persistLater() { c.unwritten = true }

// writeIfUnwritten persists the cache if persistLater left it unwritten.
func (c *epochCache) writeIfUnwritten() error {
	if !c.unwritten {
		return nil
	}
	return c.persist()
}

// latest is the newest epoch, or UndefinedEpoch.
func (c *epochCache) latest() int32 {
	if len(c.entries) == 0 {
		return UndefinedEpoch
	}
	return c.entries[len(c.entries)-1].Epoch
}

// assign records that epoch starts at start, dropping entries it
// contradicts (epoch >= epoch or start offset >= start), as Kafka's assign.
// It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if epoch < 0 {
		return false
	}
	if n := len(c.entries); n > 0 && c.entries[n-1].Epoch == epoch && c.entries[n-1].StartOffset <= start {
		return false
	}
	kept := c.entries[:0:0]
	for _, e := range c.entries {
		if e.Epoch < epoch && e.StartOffset < start {
			kept = append(kept, e)
		}
	}
	c.entries = append(kept, EpochEntry{Epoch: epoch, StartOffset: start})
	return true
}

// truncateFromEnd drops entries starting at or after end (the new log end
// offset). It reports whether the cache changed.
func (c *epochCache) truncateFromEnd(end int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= end {
		n--
	}
	if n == len(c.entries) {
		return false
	}
	c.entries = append([]EpochEntry(nil), c.entries[:n]...)
	return true
}

// truncateFromStart applies a new log start offset as Kafka's
// truncateFromStart: entries starting at or below start are removed and the
// last of them is kept with its start moved to start. It reports whether
// the cache changed.
func (c *epochCache) truncateFromStart(start int64) bool {
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= start {
		i++
	}
	if i == 0 || (i == 1 && c.entries[0].StartOffset == start) {
		return false
	}
	kept := append([]EpochEntry(nil), c.entries[i-1:]...)
	kept[0].StartOffset = start
	c.entries = kept
	return true
}

// endOffsetFor implements KIP-101's OffsetsForLeaderEpoch lookup with the
// semantics of Kafka's LeaderEpochFileCache.endOffsetFor: the largest epoch
// <= requested and the start offset of the first epoch after it; the log end
// offset for the latest epoch; (UndefinedEpoch, UndefinedEpochOffset) when
// requested is undefined or newer than every known epoch.
func (c *epochCache) endOffsetFor(requested int32, leo int64) (int32, int64) {
	if requested == UndefinedEpoch || len(c.entries) == 0 {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if requested == c.latest() {
		return requested, leo
	}
	// higher: first entry with Epoch > requested.
	hi := 0
	for hi < len(c.entries) && c.entries[hi].Epoch <= requested {
		hi++
	}
	if hi == len(c.entries) {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if hi == 0 {
		// Older than every known epoch: its data is gone; point at the
		// start of the first known epoch.
		return requested, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}
