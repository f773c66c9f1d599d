package compat

// The way back after a crash: kbroker is killed with SIGKILL and Apache
// Kafka 3.9 opens the log dir it left (no clean-shutdown marker, producer
// snapshots only at the segment rolls, offset checkpoints behind the log).
// Kafka recovers the unflushed segments as it would its own; what must
// survive is every acknowledged record, the transactions as read_committed
// sees them, a group's committed offset and an idempotent producer's
// sequence state.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/integration"
)

func TestKafka39OpensCrashedKbrokerLogDir(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, a kbroker broker and Apache Kafka 3.9")
	}
	const topic, group, txnID = "crashed", "crashed-group", "crashed-txn"
	z := integration.StartZooKeeper(t)
	logDir := filepath.Join(t.TempDir(), "data")
	kb := startKbrokerOnDir(t, z, "/c", logDir, map[string]string{
		"offsets.topic.replication.factor":         "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
	})
	adm := newAdmin(t, kb.Addr())
	// Small segments: the idempotent producer's first batches are in
	// rolled segments (with snapshots at their rolls), its last ones in
	// the active segment that the crash leaves unflushed.
	segBytes := "400"
	createTopic(t, adm, topic, 1, map[string]*string{"segment.bytes": &segBytes})
	waitLeader(t, kb.Addr(), topic)
	pid, epoch := initIdempotent(t, kb.Addr())
	raw := newRawProducerAt(t, kb.Addr(), topic)
	var all, committed []string
	for i := range 6 {
		tag := fmt.Sprintf("p%d", i)
		if code, off := raw.produce(rawBatch(pid, epoch, int32(2*i), 2, tag)); code != 0 || off != int64(2*i) {
			t.Fatalf("kbroker: idempotent batch %d: error %d offset %d", i, code, off)
		}
		all = append(all, tag+"-v0", tag+"-v1")
		committed = append(committed, tag+"-v0", tag+"-v1")
	}
	txn(t, kb.Addr(), txnID, topic, true, "c0", "c1")
	txn(t, kb.Addr(), txnID, topic, false, "a0")
	txn(t, kb.Addr(), txnID, topic, true, "c2")
	all = append(all, "c0", "c1", "a0", "c2")
	committed = append(committed, "c0", "c1", "c2")
	commitOffset(t, adm, group, topic, 7)
	leo := endOffset(t, kb.Addr(), topic)
	kb.Kill()
	// Kafka does not wait for a crashed broker's registration to expire: it
	// exits on finding /brokers/ids/1 still owned by the old session. An
	// operator would start it again; the test waits for the expiry first.
	zkc := dialRollingZK(t, z, "/c")
	waitFor(t, kafkaStartTimeout, "the killed kbroker's registration to expire", func() bool {
		ok, _, err := zkc.Exists("/brokers/ids/1")
		return err == nil && !ok
	})

	kf := startKafka39Dir(t, z, "/c", 1, logDir)
	waitLeader(t, kf.Addr(), topic)
	checkValues(t, kf.Addr(), topic, false, all)
	checkValues(t, kf.Addr(), topic, true, committed)
	checkOffset(t, kf.Addr(), group, topic, 7)
	if got := endOffset(t, kf.Addr(), topic); got != leo {
		t.Errorf("Kafka 3.9's log end offset after kbroker's crash: %d, want kbroker's %d", got, leo)
	}
	raw = newRawProducerAt(t, kf.Addr(), topic)
	// A retry of the last idempotent batch is a duplicate (Kafka rebuilt
	// the producer's state from kbroker's snapshot and log), the next
	// sequence is accepted.
	if code, off := raw.produce(rawBatch(pid, epoch, 10, 2, "p5")); code != 0 || off != 10 {
		t.Fatalf("Kafka: retry of kbroker's last idempotent batch: error %d offset %d, want the original offset 10", code, off)
	}
	if code, off := raw.produce(rawBatch(pid, epoch, 12, 2, "p6")); code != 0 || off != leo {
		t.Fatalf("Kafka: next idempotent batch: error %d offset %d, want %d", code, off, leo)
	}
	// A crash leaves unflushed segments, which Kafka recovers; nothing it
	// finds may be invalid or corrupt.
	out := kf.out.String()
	for _, bad := range []string{"Found invalid messages", "CorruptRecordException", "CorruptSnapshotException",
		"Failed to load producer snapshot", "InconsistentTopicId", "Malformed line", "Error while"} {
		if strings.Contains(out, bad) {
			t.Errorf("Kafka 3.9 logged %q on the dir of a crashed kbroker:\n%s", bad, grepLines(out, bad))
		}
	}
	t.Logf("Kafka 3.9's recovery of %s-0:\n%s", topic, grepLines(grepLines(out, topic+"-0"), "Recovering unflushed segment"))
}

// TestKbrokerOpensCrashedKafka39LogDir is the other way: Kafka 3.9 is
// killed with SIGKILL and kbroker opens its dir.
func TestKbrokerOpensCrashedKafka39LogDir(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker broker")
	}
	const topic, group, txnID = "crashed", "crashed-group", "crashed-txn"
	z := integration.StartZooKeeper(t)
	logDir := filepath.Join(t.TempDir(), "data")
	kf := startKafka39Dir(t, z, "/k", 1, logDir)
	adm := newAdmin(t, kf.Addr())
	segBytes := "400"
	createTopic(t, adm, topic, 1, map[string]*string{"segment.bytes": &segBytes})
	waitLeader(t, kf.Addr(), topic)
	pid, epoch := initIdempotent(t, kf.Addr())
	raw := newRawProducerAt(t, kf.Addr(), topic)
	var all, committed []string
	for i := range 6 {
		tag := fmt.Sprintf("p%d", i)
		if code, off := raw.produce(rawBatch(pid, epoch, int32(2*i), 2, tag)); code != 0 || off != int64(2*i) {
			t.Fatalf("Kafka: idempotent batch %d: error %d offset %d", i, code, off)
		}
		all = append(all, tag+"-v0", tag+"-v1")
		committed = append(committed, tag+"-v0", tag+"-v1")
	}
	txn(t, kf.Addr(), txnID, topic, true, "c0", "c1")
	txn(t, kf.Addr(), txnID, topic, false, "a0")
	txn(t, kf.Addr(), txnID, topic, true, "c2")
	all = append(all, "c0", "c1", "a0", "c2")
	committed = append(committed, "c0", "c1", "c2")
	commitOffset(t, adm, group, topic, 7)
	leo := endOffset(t, kf.Addr(), topic)
	kf.kill()

	kb := startKbrokerOnDir(t, z, "/k", logDir, nil)
	waitLeader(t, kb.Addr(), topic)
	checkValues(t, kb.Addr(), topic, false, all)
	checkValues(t, kb.Addr(), topic, true, committed)
	checkOffset(t, kb.Addr(), group, topic, 7)
	if got := endOffset(t, kb.Addr(), topic); got != leo {
		t.Errorf("kbroker's log end offset after Kafka's crash: %d, want Kafka's %d", got, leo)
	}
	raw = newRawProducerAt(t, kb.Addr(), topic)
	if code, off := raw.produce(rawBatch(pid, epoch, 10, 2, "p5")); code != 0 || off != 10 {
		t.Fatalf("kbroker: retry of Kafka's last idempotent batch: error %d offset %d, want the original offset 10", code, off)
	}
	if code, off := raw.produce(rawBatch(pid, epoch, 12, 2, "p6")); code != 0 || off != leo {
		t.Fatalf("kbroker: next idempotent batch: error %d offset %d, want %d", code, off, leo)
	}
	t.Logf("kbroker on the dir of a crashed Kafka:\n%s", grepLines(kb.Log(), topic))
}
