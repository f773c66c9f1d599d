package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/kbroker/kbroker/storage/vfs"
)

// Kafka's checkpoint file names in a log dir and a partition dir.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	ReplicationCheckpointFile    = "replication-offset-checkpoint"
	LeaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	CleanerCheckpointFile        = "cleaner-offset-checkpoint"
)

// checkpointVersion is the only version of Kafka's text checkpoint format.
const checkpointVersion = 0

// writeCheckpoint writes Kafka's text checkpoint format ("0", the count, then
// one line per entry) to path atomically: temp file, fsync, rename, fsync dir.
func writeCheckpoint(path string, lines []string) error {
	return writeCheckpointFS(vfs.Default, path, lines)
}

// writeCheckpointFS is writeCheckpoint on fs.
func writeCheckpointFS(fs vfs.FS, path string, lines []string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return vfs.WriteFileAtomic(fs, path, b.Bytes(), 0o644)
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new contents.
func writeFileAtomic(path string, data []byte) error {
	return vfs.WriteFileAtomic(vfs.Default, path, data, 0o644)
}

// syncDir fsyncs a directory so that creations, renames and removals in it
// are durable.
func syncDir(dir string) error { return vfs.SyncDir(vfs.Default, dir) }

// readCheckpoint reads Kafka's text checkpoint format and returns the
// whitespace-separated fields of each entry line, each with exactly nfields
// fields. A missing file yields no entries and no error, and so does an
// empty one: Kafka creates cleaner-offset-checkpoint empty when its cleaner
// starts and reads a file without a version line as no entries
// (CheckpointFile's reader).
func readCheckpoint(path string, nfields int) ([][]string, error) {
	return readCheckpointFS(vfs.Default, path, nfields)
}

// readCheckpointFS is readCheckpoint on fs.
func readCheckpointFS(fs vfs.FS, path string, nfields int) ([][]string, error) {
	data, err := vfs.ReadFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) == 0 {
		return nil, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := line()
	if !ok || v != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("read %s: unsupported version line %q", path, v)
	}
	c, ok := line()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("read %s: bad count line %q", path, c)
	}
	out := make([][]string, 0, min(n, 1<<16))
	for i := 0; i < n; i++ {
		l, ok := line()
		if !ok {
			return nil, fmt.Errorf("read %s: %d entries, want %d", path, i, n)
		}
		f := strings.Fields(l)
		if len(f) != nfields {
			return nil, fmt.Errorf("read %s: entry %q: want %d fields", path, l, nfields)
		}
		out = append(out, f)
	}
	if l, ok := line(); ok && l != "" {
		return nil, fmt.Errorf("read %s: trailing line %q after %d entries", path, l, n)
	}
	return out, nil
}

// WriteOffsetCheckpoint writes a Kafka offset checkpoint file ("topic
// partition offset" lines, sorted for stable output) atomically.
func WriteOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	return writeOffsetCheckpoint(vfs.Default, path, offsets)
}

// writeOffsetCheckpoint is WriteOffsetCheckpoint on fs.
func writeOffsetCheckpoint(fs vfs.FS, path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeCheckpointFS(fs, path, lines)
}

// ReadOffsetCheckpoint reads a Kafka offset checkpoint file. A missing file
// is an empty map.
func ReadOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	return readOffsetCheckpoint(vfs.Default, path)
}

// readOffsetCheckpoint is ReadOffsetCheckpoint on fs.
func readOffsetCheckpoint(fs vfs.FS, path string) (map[TopicPartition]int64, error) {
	entries, err := readCheckpointFS(fs, path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(entries))
	for _, e := range entries {
		p, err1 := strconv.ParseInt(e[1], 10, 32)
		off, err2 := strconv.ParseInt(e[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("read %s: bad entry %q", path, strings.Join(e, " "))
		}
		out[TopicPartition{Topic: e[0], Partition: int32(p)}] = off
	}
	return out, nil
}
