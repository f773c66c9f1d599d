package compat

// A log dir moves from Apache Kafka 3.9 (ZooKeeper mode) to kbroker and
// back: the same broker.id, ZooKeeper chroot and log.dirs, one broker at a
// time. What must survive each move: every record, the committed and the
// aborted transactions as read_committed sees them, a group's committed
// offsets and an idempotent producer's state (its next sequence is
// accepted, a retry of its last batch is answered with the original offset
// and not written again), without either broker saying it dropped or
// rebuilt a file of the other.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/integration"
	"github.com/kbroker/kbroker/storage"
)

// kafka39FixturesEnv, if set to a directory, makes
// TestKafka39LogDirBothWays copy the files Kafka 3.9 wrote into it (the
// fixtures of storage's tests: storage/testdata/kafka39).
const kafka39FixturesEnv = "KBROKER_KAFKA39_FIXTURES"

func TestKafka39LogDirBothWays(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 twice and a kbroker broker")
	}
	const topic, group, txnID, openTxnID, bornTopic = "moved", "moved-group", "moved-txn", "moved-open-txn", "born-on-kbroker"
	// openTxnTimeout is long enough for the switch to kbroker and the
	// transactions there to happen before kbroker aborts the open one.
	const openTxnTimeout = 20 * time.Second
	z := integration.StartZooKeeper(t)
	logDir := filepath.Join(t.TempDir(), "data")
	partDir := filepath.Join(logDir, topic+"-0")

	// 1. Kafka 3.9 writes the dir. Small segments, so that the log has
	// several, with producer snapshots at their rolls and the aborted
	// transaction's .txnindex beside a later one.
	kf := startKafka39Dir(t, z, "/x", 1, logDir)
	adm := newAdmin(t, kf.Addr())
	segBytes := "400"
	createTopic(t, adm, topic, 1, map[string]*string{"segment.bytes": &segBytes})
	pid, epoch := initIdempotent(t, kf.Addr())
	raw := newRawProducerAt(t, kf.Addr(), topic)
	for i, seq := range []int32{0, 2, 4} {
		if code, off := raw.produce(rawBatch(pid, epoch, seq, 2, fmt.Sprintf("p%d", i))); code != 0 || off != int64(2*i) {
			t.Fatalf("Kafka: idempotent batch %d: error %d offset %d", i, code, off)
		}
	}
	txn(t, kf.Addr(), txnID, topic, true, "c0", "c1", "c2") // 6..8, marker 9
	txn(t, kf.Addr(), txnID, topic, false, "a0", "a1")      // 10..11, marker 12
	// A transaction left open at the switch (13): kbroker's coordinator
	// must abort it once it times out, and the LSO holds until then.
	open := newKgo(t, kf.Addr(), kgo.TransactionalID(openTxnID), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(openTxnTimeout))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("o0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	open.Close() // without ending the transaction
	commitOffset(t, adm, group, topic, 4)
	// The idempotent producer's batches leave the log; its state stays in
	// the snapshots only (a replay of the log would not know it).
	deleteBelow(t, adm, topic, 6)
	kf.stop(t)
	if out := kf.out.String(); !strings.Contains(out, "[KafkaServer id=1] shut down completed") {
		t.Fatalf("Kafka 3.9 did not shut down cleanly:\n%s", tail(out, 4000))
	}
	checkKafkaFiles(t, logDir, partDir)
	if dst := os.Getenv(kafka39FixturesEnv); dst != "" {
		copyFixtures(t, logDir, partDir, dst)
	}

	// 2. kbroker opens it: broker.id 1 on the same chroot and log dir.
	kb := startKbrokerOnDir(t, z, "/x", logDir, map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
	})
	waitLeader(t, kb.Addr(), topic)
	all := []string{"c0", "c1", "c2", "a0", "a1", "o0"}
	checkValues(t, kb.Addr(), topic, false, all)
	checkOffset(t, kb.Addr(), group, topic, 4)
	raw = newRawProducerAt(t, kb.Addr(), topic)
	// A retry of Kafka's last batch is a duplicate (kbroker read Kafka's
	// snapshot), the next sequence is accepted.
	if code, off := raw.produce(rawBatch(pid, epoch, 4, 2, "p2")); code != 0 || off != 4 {
		t.Fatalf("kbroker: retry of Kafka's last batch: error %d offset %d, want the original offset 4", code, off)
	}
	p3 := endOffset(t, kb.Addr(), topic) // 14
	if code, off := raw.produce(rawBatch(pid, epoch, 6, 2, "p3")); code != 0 || off != p3 {
		t.Fatalf("kbroker: next idempotent batch: error %d offset %d, want %d", code, off, p3)
	}
	txn(t, kb.Addr(), txnID, topic, false, "ka0")
	txn(t, kb.Addr(), txnID, topic, true, "kc0")
	all = append(all, "p3-v0", "p3-v1", "ka0", "kc0")
	committed := []string{"c0", "c1", "c2", "p3-v0", "p3-v1", "kc0"}
	checkValues(t, kb.Addr(), topic, false, all)
	// read_committed passes the open transaction once kbroker's
	// coordinator aborted it.
	checkValues(t, kb.Addr(), topic, true, committed)
	// A topic born on kbroker goes back to Kafka too.
	kbAdm := newAdmin(t, kb.Addr())
	createTopic(t, kbAdm, bornTopic, 1, nil)
	waitLeader(t, kb.Addr(), bornTopic)
	born := newKgo(t, kb.Addr(), kgo.DefaultProduceTopic(bornTopic))
	for _, v := range []string{"b0", "b1", "b2"} {
		if err := born.ProduceSync(testCtx(t), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("producing to %s on kbroker: %v", bornTopic, err)
		}
	}
	born.Close()
	md, err := kbAdm.Metadata(testCtx(t), bornTopic)
	if err != nil {
		t.Fatal(err)
	}
	bornID := md.Topics[bornTopic].ID
	leo := endOffset(t, kb.Addr(), topic)
	if err := kb.Term(60 * time.Second); err != nil {
		t.Fatalf("kbroker did not stop cleanly: %v\n%s", err, kb.Log())
	}
	for _, bad := range []string{"ignoring corrupt producer snapshot", "unsupported version line", "unreadable producer snapshot",
		"producer state is rebuilt", "ignoring unreadable checkpoint", "transaction index unusable"} {
		if strings.Contains(kb.Log(), bad) {
			t.Errorf("kbroker logged %q on Kafka's log dir:\n%s", bad, grepLines(kb.Log(), bad))
		}
	}
	checkKbrokerFiles(t, partDir, leo)
	if b, err := os.ReadFile(filepath.Join(logDir, bornTopic+"-0", storage.PartitionMetadataFile)); err != nil {
		t.Errorf("kbroker wrote no partition.metadata for %s: %v", bornTopic, err)
	} else if id, err := storage.DecodePartitionMetadata(b); err != nil || id != bornID {
		t.Errorf("kbroker's partition.metadata of %s: %x %v, want topic id %x", bornTopic, id, err, bornID)
	}

	// 3. The way back: Kafka 3.9 on the dir kbroker wrote.
	kf = startKafka39Dir(t, z, "/x", 1, logDir)
	waitLeader(t, kf.Addr(), topic)
	checkValues(t, kf.Addr(), topic, false, all)
	checkValues(t, kf.Addr(), topic, true, committed)
	checkOffset(t, kf.Addr(), group, topic, 4)
	checkValues(t, kf.Addr(), bornTopic, true, []string{"b0", "b1", "b2"})
	raw = newRawProducerAt(t, kf.Addr(), topic)
	if code, off := raw.produce(rawBatch(pid, epoch, 6, 2, "p3")); code != 0 || off != p3 {
		t.Fatalf("Kafka: retry of kbroker's last batch: error %d offset %d, want the original offset %d", code, off, p3)
	}
	if code, off := raw.produce(rawBatch(pid, epoch, 8, 2, "p4")); code != 0 || off != leo {
		t.Fatalf("Kafka: next idempotent batch: error %d offset %d, want %d", code, off, leo)
	}
	out := kf.out.String()
	if os.Getenv("KBROKER_LOGDIR_DEBUG") != "" {
		t.Logf("KBROKER LOG:\n%s\nKAFKA:\n%s", kb.Log(), grepLines(out, "moved-0"))
	}
	for _, bad := range []string{"Failed to load producer snapshot", "CorruptSnapshotException", "CorruptIndexException",
		"Error while reading checkpoint", "Found a corrupted index file", "Recovering unflushed segment",
		"Could not find offset index file",
		"InconsistentTopicId", "Malformed line"} {
		if strings.Contains(out, bad) {
			t.Errorf("Kafka 3.9 logged %q on kbroker's log dir:\n%s", bad, grepLines(out, bad))
		}
	}
	// With kbroker's snapshot at the log end Kafka replays nothing.
	if want := fmt.Sprintf("rebuilding producer state from offset %d", leo); !strings.Contains(grepLines(out, "partition="+topic+"-0,"), want) {
		t.Errorf("Kafka 3.9 did not load kbroker's snapshot at the log end (no %q):\n%s", want, grepLines(out, "producer state"))
	}
}

// oneBrokerInternalTopics are startKbrokerOnDir's extra properties for a
// kbroker alone in its cluster: internal topics with one replica, as
// startKafka39 gives Kafka.
var oneBrokerInternalTopics = map[string]string{
	"offsets.topic.replication.factor":         "1",
	"transaction.state.log.replication.factor": "1",
	"transaction.state.log.min.isr":            "1",
}

// startKbrokerOnDir starts one kbroker broker, id 1, on z under chroot with
// log.dirs=logDir and Kafka's internal topic partition counts (groups and
// transactional ids hash onto them), plus extra, and waits until it is
// the controller.
func startKbrokerOnDir(t *testing.T, z *integration.ZooKeeper, chroot, logDir string, extra map[string]string) *integration.BrokerProc {
	t.Helper()
	bs := integration.StartClusterFunc(t, z, 1, func(*integration.BrokerProc) map[string]string {
		props := map[string]string{
			"zookeeper.connect":                    z.Addr + chroot,
			"log.dirs":                             logDir,
			"offsets.topic.num.partitions":         "50",
			"transaction.state.log.num.partitions": "50",
		}
		for k, v := range extra {
			props[k] = v
		}
		return props
	})
	waitKbrokerController(t, bs[0])
	return bs[0]
}

// waitKbrokerController waits until the one broker of a kbroker cluster
// sees itself as the controller.
func waitKbrokerController(t *testing.T, kb *integration.BrokerProc) {
	t.Helper()
	waitFor(t, kafkaStartTimeout, "the kbroker broker to see itself as controller", func() bool {
		m, err := newAdmin(t, kb.Addr()).BrokerMetadata(testCtx(t))
		return err == nil && len(m.Brokers) == 1 && m.Controller == 1
	})
}

// initIdempotent asks the broker at addr for an idempotent producer id.
func initIdempotent(t *testing.T, addr string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	resp, err := req.RequestWith(testCtx(t), newKgo(t, addr))
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v, error %d", err, respCode(resp))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func respCode(r *kmsg.InitProducerIDResponse) int16 {
	if r == nil {
		return -1
	}
	return r.ErrorCode
}

// txn produces values in one transaction of txnID and commits or aborts it.
func txn(t *testing.T, addr, txnID, topic string, commit bool, values ...string) {
	t.Helper()
	cl := newKgo(t, addr, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic))
	defer cl.Close()
	ctx := testCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("transactional produce to %s: %v", addr, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("ending the transaction (commit %v) on %s: %v", commit, addr, err)
	}
}

func commitOffset(t *testing.T, adm *kadm.Client, group, topic string, at int64) {
	t.Helper()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(testCtx(t), group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("committing offsets of %s: %v", group, err)
	}
}

// deleteBelow moves the partition's log start to offset at (DeleteRecords).
func deleteBelow(t *testing.T, adm *kadm.Client, topic string, at int64) {
	t.Helper()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
	resp, err := adm.DeleteRecords(testCtx(t), offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords below %d: %v", at, err)
	}
}

func checkOffset(t *testing.T, addr, group, topic string, want int64) {
	t.Helper()
	var got int64 = -2
	waitFor(t, opTimeout, "the group's committed offset", func() bool {
		resp, err := newAdmin(t, addr).FetchOffsets(testCtx(t), group)
		if err != nil || resp.Error() != nil {
			return false
		}
		o, ok := resp.Lookup(topic, 0)
		got = o.At
		return ok && o.At == want
	})
	if got != want {
		t.Fatalf("%s: committed offset %d, want %d", group, got, want)
	}
}

// endOffset is the partition's log end offset on the broker at addr.
func endOffset(t *testing.T, addr, topic string) int64 {
	t.Helper()
	lo, err := newAdmin(t, addr).ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := lo.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s: %+v", topic, o)
	}
	return o.Offset
}

// waitLeader waits until the broker at addr leads the topic's partition 0
// and answers ListOffsets for it.
func waitLeader(t *testing.T, addr, topic string) {
	t.Helper()
	adm := newAdmin(t, addr)
	waitFor(t, kafkaStartTimeout, "a leader of "+topic, func() bool {
		lo, err := adm.ListEndOffsets(testCtx(t), topic)
		if err != nil {
			return false
		}
		o, ok := lo.Lookup(topic, 0)
		return ok && o.Err == nil
	})
}

// checkValues reads the partition from the start and checks that the
// values read are exactly want, in order.
func checkValues(t *testing.T, addr, topic string, readCommitted bool, want []string) {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	cl := newKgo(t, addr, kgo.FetchIsolationLevel(iso),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s (read_committed %v): values %q, want %q", addr, readCommitted, got, want)
	}
}

// checkKafkaFiles parses what Kafka 3.9 wrote with storage's readers.
func checkKafkaFiles(t *testing.T, logDir, partDir string) {
	t.Helper()
	for _, name := range []string{storage.RecoveryPointCheckpointFile, storage.ReplicationCheckpointFile,
		storage.LogStartOffsetCheckpointFile, storage.CleanerCheckpointFile} {
		if _, err := storage.ReadOffsetCheckpoint(filepath.Join(logDir, name)); err != nil {
			t.Errorf("Kafka's %s: %v", name, err)
		}
	}
	if mp, found, err := storage.ReadMetaProperties(logDir); err != nil || !found || mp.Version != 0 || mp.NodeID != 1 {
		t.Errorf("Kafka's meta.properties: %+v found %v: %v", mp, found, err)
	}
	snaps, _ := filepath.Glob(filepath.Join(partDir, "*.snapshot"))
	if len(snaps) == 0 {
		t.Errorf("Kafka wrote no producer snapshot in %s", partDir)
	}
	for _, p := range snaps {
		b, err := os.ReadFile(p)
		if err == nil {
			_, err = storage.DecodeProducerSnapshot(b)
		}
		if err != nil {
			t.Errorf("Kafka's %s: %v", filepath.Base(p), err)
		}
	}
	checkTxnIndexes(t, partDir, 10, 12)
}

// checkKbrokerFiles checks the snapshot kbroker wrote at its clean shutdown
// (at the log end leo) and that its .txnindex files hold the three aborted
// transactions: Kafka's (10..12), the one left open (from 13) and
// kbroker's own.
func checkKbrokerFiles(t *testing.T, partDir string, leo int64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(partDir, fmt.Sprintf("%020d.snapshot", leo)))
	if err == nil {
		_, err = storage.DecodeProducerSnapshot(b)
	}
	if err != nil {
		t.Errorf("kbroker's snapshot at its log end: %v", err)
	}
	got := txnIndexPairs(t, partDir)
	if len(got) != 6 || got[0] != 10 || got[1] != 12 || !slices.Contains([]int64{got[2], got[4]}, 13) {
		t.Errorf("aborted transactions (first, marker) in kbroker's .txnindex files: %v, want (10, 12), (13, …) and kbroker's", got)
	}
}

// checkTxnIndexes checks that the dir's .txnindex files list exactly the
// aborted transactions given as (first offset, marker offset) pairs.
func checkTxnIndexes(t *testing.T, partDir string, pairs ...int64) {
	t.Helper()
	if got := txnIndexPairs(t, partDir); !slices.Equal(got, pairs) {
		t.Errorf("aborted transactions in %s: %v, want %v", partDir, got, pairs)
	}
}

// txnIndexPairs lists the (first offset, marker offset) pairs of the dir's
// .txnindex files, in file order.
func txnIndexPairs(t *testing.T, partDir string) []int64 {
	t.Helper()
	idx, _ := filepath.Glob(filepath.Join(partDir, "*.txnindex"))
	var got []int64
	for _, p := range idx {
		var base int64
		fmt.Sscanf(filepath.Base(p), "%020d", &base)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ents, err := storage.DecodeTxnIndex(b, base)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
		for _, e := range ents {
			got = append(got, e.FirstOffset, e.LastOffset)
		}
	}
	return got
}

// copyFixtures copies Kafka's files to dst for storage's tests.
func copyFixtures(t *testing.T, logDir, partDir, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, name := range []string{storage.RecoveryPointCheckpointFile, storage.ReplicationCheckpointFile,
		storage.LogStartOffsetCheckpointFile, storage.CleanerCheckpointFile, storage.MetaPropertiesFile} {
		files = append(files, filepath.Join(logDir, name))
	}
	for _, glob := range []string{"*.snapshot", "*.txnindex", "leader-epoch-checkpoint", "partition.metadata"} {
		m, _ := filepath.Glob(filepath.Join(partDir, glob))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("copied %d files Kafka 3.9 wrote to %s", len(files), dst)
}

// grepLines returns the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestKafka39OpensKbrokerLogDir: a log dir that only kbroker ever wrote
// (cluster mode, its own meta.properties, snapshots and transaction
// indexes) opens in Kafka 3.9 with the same broker.id and ZooKeeper:
// every record is served and read_committed hides the aborted transaction.
func TestKafka39OpensKbrokerLogDir(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, a kbroker broker and Apache Kafka 3.9")
	}
	const topic, txnID = "kb-only", "kb-only-txn"
	z := integration.StartZooKeeper(t)
	logDir := filepath.Join(t.TempDir(), "data")
	kb := startKbrokerOnDir(t, z, "/y", logDir, oneBrokerInternalTopics)
	createTopic(t, newAdmin(t, kb.Addr()), topic, 1, nil)
	waitLeader(t, kb.Addr(), topic)
	txn(t, kb.Addr(), txnID, topic, true, "c0", "c1")
	txn(t, kb.Addr(), txnID, topic, false, "a0")
	txn(t, kb.Addr(), txnID, topic, true, "c2")
	if err := kb.Term(60 * time.Second); err != nil {
		t.Fatalf("kbroker did not stop cleanly: %v\n%s", err, kb.Log())
	}
	mp, _, err := storage.ReadMetaProperties(logDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kbroker's meta.properties: %+v", mp)

	kf := startKafka39Dir(t, z, "/y", 1, logDir)
	waitLeader(t, kf.Addr(), topic)
	checkValues(t, kf.Addr(), topic, false, []string{"c0", "c1", "a0", "c2"})
	checkValues(t, kf.Addr(), topic, true, []string{"c0", "c1", "c2"})
	out := kf.out.String()
	if os.Getenv("KBROKER_LOGDIR_DEBUG") != "" {
		t.Logf("KAFKA:\n%s\nWARN:\n%s\nERROR:\n%s", grepLines(out, topic+"-0"), grepLines(out, "WARN"), grepLines(out, "ERROR"))
		ls, _ := filepath.Glob(filepath.Join(logDir, topic+"-0", "*"))
		t.Logf("files: %v", ls)
	}
	for _, bad := range []string{"Failed to load producer snapshot", "CorruptSnapshotException", "CorruptIndexException",
		"Error while reading checkpoint", "Recovering unflushed segment",
		"Could not find offset index file", "InconsistentTopicId", "Malformed line"} {
		if strings.Contains(out, bad) {
			t.Errorf("Kafka 3.9 logged %q on kbroker's log dir:\n%s", bad, grepLines(out, bad))
		}
	}
	// kbroker's snapshot at the log end (7) is loaded: nothing replayed.
	mine := grepLines(out, "partition="+topic+"-0,")
	if want := "rebuilding producer state from offset 7"; !strings.Contains(mine, want) || strings.Contains(mine, "rebuilding producer state from offset 0") {
		t.Errorf("Kafka 3.9 did not load kbroker's snapshot at the log end (want %q):\n%s", want, mine)
	}
}
