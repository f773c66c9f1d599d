package storage

// Files Apache Kafka 3.9.2 wrote (ZooKeeper mode) in testdata/kafka39, made
// by compat's TestKafka39LogDirBothWays with KBROKER_KAFKA39_FIXTURES set:
// a topic "moved" with 400-byte segments, an idempotent producer (id 0,
// offsets 0..5 in batches of two), a transactional one (id 1) that
// committed offsets 6..8 (marker 9) and aborted 10..11 (marker 12), another
// (id 2) that left a transaction open at 13, then DeleteRecords below 6 and
// a clean shutdown. Regenerating them changes the timestamps below.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

const kafka39Fixtures = "testdata/kafka39"

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kafka39Fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKafka39ProducerSnapshots decodes Kafka's snapshots and encodes the
// same entries back to the same bytes.
func TestKafka39ProducerSnapshots(t *testing.T) {
	idem := ProducerSnapshotEntry{ProducerID: 0, ProducerEpoch: 0, LastSequence: 5, LastOffset: 5, OffsetDelta: 1,
		Timestamp: 1796461405992, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
	for _, tc := range []struct {
		file string
		want []ProducerSnapshotEntry
	}{
		// At the roll to offset 7: the transaction committed later is open.
		{"00000000000000000007.snapshot", []ProducerSnapshotEntry{idem, {ProducerID: 1, ProducerEpoch: 0, LastSequence: 0, LastOffset: 6,
			Timestamp: 1796461410139, CoordinatorEpoch: -1, CurrentTxnFirstOffset: 6}}},
		// At the roll to 12, before the ABORT marker: the next transaction
		// (a new epoch) is open at 10; the COMMIT marker's coordinator epoch.
		{"00000000000000000012.snapshot", []ProducerSnapshotEntry{idem, {ProducerID: 1, ProducerEpoch: 1, LastSequence: 1, LastOffset: 11,
			Timestamp: 1796461410341, CoordinatorEpoch: 0, CurrentTxnFirstOffset: 10}}},
		// At the clean shutdown (the log end, 14): producer 1's
		// transactions are over, producer 2's is open at 13.
		{"00000000000000000014.snapshot", []ProducerSnapshotEntry{idem, {ProducerID: 1, ProducerEpoch: 1, LastSequence: 1, LastOffset: 11,
			Timestamp: 1796461410356, CoordinatorEpoch: 0, CurrentTxnFirstOffset: -1}, {ProducerID: 2, ProducerEpoch: 0, LastSequence: 0,
			LastOffset: 13, Timestamp: 1796461410386, CoordinatorEpoch: -1, CurrentTxnFirstOffset: 13}}},
	} {
		b := readFixture(t, tc.file)
		got, err := DecodeProducerSnapshot(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %+v, want %+v", tc.file, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s entry %d: %+v, want %+v", tc.file, i, got[i], tc.want[i])
			}
		}
		if enc := EncodeProducerSnapshot(got); !bytes.Equal(enc, b) {
			t.Errorf("%s: re-encoded\n%x\nKafka wrote\n%x", tc.file, enc, b)
		}
	}
}

// TestProducerSnapshotCorrupt: every damage to a snapshot is
// ErrCorruptSnapshot, never a panic or a partial state.
func TestProducerSnapshotCorrupt(t *testing.T) {
	good := readFixture(t, "00000000000000000014.snapshot")
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	recrc := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[2:], crc32c(b[snapshotCRCFrom:]))
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"header only", good[:6]},
		{"version 0", mod(func(b []byte) []byte { b[1] = 0; return b })},
		{"version 2", mod(func(b []byte) []byte { b[1] = 2; return b })},
		{"flipped bit", mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b })},
		{"crc flipped", mod(func(b []byte) []byte { b[3] ^= 1; return b })},
		{"truncated entry", recrc(mod(func(b []byte) []byte { return b[:len(b)-3] }))},
		{"trailing bytes", recrc(mod(func(b []byte) []byte { return append(b, 0) }))},
		{"negative count", recrc(mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[6:], 0xffffffff); return b }))},
		{"count too high", recrc(mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[6:], 4); return b }))},
		{"kbroker's legacy format", append(binary.BigEndian.AppendUint32(nil, crc32c([]byte(`{"version":1}`))), `{"version":1}`...)},
	} {
		if _, err := DecodeProducerSnapshot(tc.b); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: %v, want ErrCorruptSnapshot", tc.name, err)
		}
	}
	if got, err := DecodeProducerSnapshot(EncodeProducerSnapshot(nil)); err != nil || len(got) != 0 {
		t.Errorf("no producers: %v %v", got, err)
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, snapshotCRC) }

// TestKafka39TxnIndex decodes Kafka's transaction index and encodes it back
// to the same bytes; damaged files are ErrCorruptTxnIndex.
func TestKafka39TxnIndex(t *testing.T) {
	b := readFixture(t, "00000000000000000012.txnindex")
	got, err := DecodeTxnIndex(b, 12)
	want := []TxnIndexEntry{{ProducerID: 1, FirstOffset: 10, LastOffset: 12, LastStableOffset: 13}}
	if err != nil || len(got) != 1 || got[0] != want[0] {
		t.Fatalf("decoded %+v %v, want %+v", got, err, want)
	}
	if enc := EncodeTxnIndex(got); !bytes.Equal(enc, b) {
		t.Errorf("re-encoded %x, Kafka wrote %x", enc, b)
	}
	for name, tc := range map[string]struct {
		b    []byte
		base int64
	}{
		"partial entry":             {b[:33], 12},
		"version 1":                 {append([]byte{0, 1}, b[2:]...), 12},
		"marker before segment":     {b, 13},
		"first offset after marker": {EncodeTxnIndex([]TxnIndexEntry{{ProducerID: 1, FirstOffset: 13, LastOffset: 12}}), 0},
	} {
		if _, err := DecodeTxnIndex(tc.b, tc.base); !errors.Is(err, ErrCorruptTxnIndex) {
			t.Errorf("%s: %v, want ErrCorruptTxnIndex", name, err)
		}
	}
	if got, err := DecodeTxnIndex(nil, 0); err != nil || len(got) != 0 {
		t.Errorf("empty file: %v %v", got, err)
	}
}

// TestKafka39Checkpoints reads Kafka's checkpoint files, the empty
// cleaner-offset-checkpoint included, and its ZooKeeper-mode
// meta.properties (version 0).
func TestKafka39Checkpoints(t *testing.T) {
	for _, tc := range []struct {
		file  string
		n     int
		moved int64 // offset of moved-0, -1 if absent
	}{
		{RecoveryPointCheckpointFile, 101, 14},
		{ReplicationCheckpointFile, 101, 14},
		{LogStartOffsetCheckpointFile, 1, 6},
		{CleanerCheckpointFile, 0, -1},
	} {
		m, err := ReadOffsetCheckpoint(filepath.Join(kafka39Fixtures, tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		off, ok := m[TopicPartition{"moved", 0}]
		if len(m) != tc.n || (tc.moved >= 0) != ok || (ok && off != tc.moved) {
			t.Errorf("%s: %d entries, moved-0 at %d (%v); want %d entries, moved-0 at %d", tc.file, len(m), off, ok, tc.n, tc.moved)
		}
	}
	c, err := loadEpochCache(vfs.Default, kafka39Fixtures)
	if err != nil || len(c.entries) != 1 || c.entries[0] != (EpochEntry{Epoch: 0, StartOffset: 6}) {
		t.Errorf("leader-epoch-checkpoint: %+v %v", c.entries, err)
	}
	mp, found, err := ReadMetaProperties(kafka39Fixtures)
	if err != nil || !found || mp.Version != 0 || mp.NodeID != 1 || mp.ClusterID != "uVQS_Ow7RnepMOFlWSHkfA" {
		t.Errorf("meta.properties: %+v %v %v", mp, found, err)
	}
}

// TestLogOnKafka39Files opens a partition dir holding Kafka's snapshots and
// transaction index: the newest snapshot and the aborted transaction below
// it are read, kbroker's own snapshot and indexes are written in the same
// format, and a damaged snapshot is removed with one log line and the next
// older one used.
func TestLogOnKafka39Files(t *testing.T) {
	var logs bytes.Buffer
	l, dir := openLog(t, Config{SegmentBytes: 1000, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := 0; i < 20; i++ {
		mustAppend(t, l, 0, batchOf(1, int64(i), 200))
	}
	for _, f := range []string{"00000000000000000007.snapshot", "00000000000000000012.snapshot", "00000000000000000014.snapshot"} {
		if err := os.WriteFile(filepath.Join(dir, f), readFixture(t, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bases := segmentBasesOf(t, l)
	if len(bases) < 3 {
		t.Fatalf("segments %v, want at least 3", bases)
	}
	// Kafka's txnindex beside the segment holding offset 12.
	segOf := func(off int64) int64 {
		b := bases[0]
		for _, s := range bases {
			if s <= off {
				b = s
			}
		}
		return b
	}
	idxPath := segmentPath(dir, segOf(12), txnIndexSuffix)
	if err := os.WriteFile(idxPath, readFixture(t, "00000000000000000012.txnindex"), 0o644); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.mu.listedSnapshots = nil
	l.mu.Unlock()
	ps, ok := l.LatestProducerSnapshot(l.LogEndOffset())
	if !ok || ps.Offset != 14 || ps.Legacy != nil || len(ps.Producers) != 3 || ps.Producers[2].CurrentTxnFirstOffset != 13 {
		t.Fatalf("latest snapshot %+v %v", ps, ok)
	}
	if got, err := l.TxnIndex(13); err != nil || len(got) != 1 || got[0].LastOffset != 12 {
		t.Fatalf("TxnIndex(13) = %+v %v", got, err)
	}
	if got, err := l.TxnIndex(12); err != nil || len(got) != 0 {
		t.Fatalf("TxnIndex(12) = %+v %v: a marker at the snapshot offset is replayed, not read", got, err)
	}

	// kbroker writes the same aborted list back: the file is unchanged;
	// one more, in a later segment, gets its own file; none, no files.
	aborted := []TxnIndexEntry{{ProducerID: 1, FirstOffset: 10, LastOffset: 12, LastStableOffset: 13}}
	if err := l.WriteTxnIndexes(aborted); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(idxPath); !bytes.Equal(b, readFixture(t, "00000000000000000012.txnindex")) {
		t.Fatalf("txnindex rewritten: %x", b)
	}
	last := bases[len(bases)-1]
	aborted = append(aborted, TxnIndexEntry{ProducerID: 2, FirstOffset: last, LastOffset: last + 1, LastStableOffset: last + 2})
	if err := l.WriteTxnIndexes(aborted); err != nil {
		t.Fatal(err)
	}
	if got, err := l.TxnIndex(l.LogEndOffset()); err != nil || len(got) != 2 || got[1] != aborted[1] {
		t.Fatalf("after a second abort: %+v %v", got, err)
	}
	if b, err := os.ReadFile(segmentPath(dir, last, txnIndexSuffix)); err != nil || !bytes.Equal(b, EncodeTxnIndex(aborted[1:])) {
		t.Fatalf("the later segment's txnindex: %x %v", b, err)
	}
	if err := l.WriteTxnIndexes(nil); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*"+txnIndexSuffix)); len(m) != 0 {
		t.Fatalf("txnindex files left without aborted transactions: %v", m)
	}

	// A damaged snapshot: one line, removed, the older one used.
	p14 := filepath.Join(dir, "00000000000000000014.snapshot")
	b := readFixture(t, "00000000000000000014.snapshot")
	b[len(b)-1] ^= 1
	if err := os.WriteFile(p14, b, 0o644); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	ps, ok = l.LatestProducerSnapshot(l.LogEndOffset())
	if !ok || ps.Offset != 12 {
		t.Fatalf("after damage: %+v %v, want the snapshot at 12", ps, ok)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "rebuilt from the log from the snapshot at offset 12") {
		t.Errorf("log after a damaged snapshot:\n%s", logs.String())
	}
	if _, err := os.Stat(p14); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("damaged snapshot kept: %v", err)
	}

	// A damaged txnindex is an error for the caller (who rebuilds).
	if err := os.WriteFile(idxPath, []byte{0, 0, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TxnIndex(l.LogEndOffset()); !errors.Is(err, ErrCorruptTxnIndex) {
		t.Errorf("damaged txnindex: %v", err)
	}
}

// TestLegacySnapshotReadable: a snapshot kbroker wrote before it wrote
// Kafka's format is still returned, as its JSON body.
func TestLegacySnapshotReadable(t *testing.T) {
	l, dir := openLog(t, Config{})
	body := []byte(`{"version":1,"offset":0,"producers":[]}`)
	legacy := append(binary.BigEndian.AppendUint32(nil, crc32c(body)), body...)
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.snapshot"), legacy, 0o644); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.mu.listedSnapshots = nil
	l.mu.Unlock()
	ps, ok := l.LatestProducerSnapshot(0)
	if !ok || !bytes.Equal(ps.Legacy, body) || ps.Producers != nil {
		t.Fatalf("legacy snapshot: %+v %v", ps, ok)
	}
}

func segmentBasesOf(t *testing.T, l *Log) []int64 {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []int64
	for _, s := range l.mu.segments {
		out = append(out, s.base)
	}
	return out
}

// TestKafka39PartitionMetadata reads Kafka's partition.metadata, writes the
// same bytes for the same id, and keeps a file naming another id.
func TestKafka39PartitionMetadata(t *testing.T) {
	b := readFixture(t, PartitionMetadataFile)
	id, err := DecodePartitionMetadata(b)
	if err != nil {
		t.Fatal(err)
	}
	if enc := EncodePartitionMetadata(id); !bytes.Equal(enc, b) {
		t.Fatalf("encoded %q, Kafka wrote %q", enc, b)
	}
	for _, bad := range []string{"", "version: 0", "version: 1\ntopic_id: " + strings.Split(string(b), ": ")[2],
		"version: 0\ntopic_id: nope", "version:0\ntopic_id: x", "version: 0\ntopic_id: AAAA\nextra: 1"} {
		if _, err := DecodePartitionMetadata([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	l, dir := openLog(t, Config{})
	path := filepath.Join(dir, PartitionMetadataFile)
	if err := l.EnsurePartitionMetadata([16]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("written for an unknown topic id: %v", err)
	}
	if err := l.EnsurePartitionMetadata(id); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
		t.Fatalf("wrote %q, want Kafka's %q", got, b)
	}
	other := id
	other[0] ^= 1
	if err := l.EnsurePartitionMetadata(other); !errors.Is(err, ErrInconsistentTopicID) {
		t.Fatalf("another topic id: %v, want ErrInconsistentTopicID", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
		t.Fatalf("file naming another id rewritten: %q", got)
	}
}
