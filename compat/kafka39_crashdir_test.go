package compat

// The way back after a crash: a broker is killed with SIGKILL and the
// other kind opens the log dir it left (no clean-shutdown marker, producer
// snapshots only at the segment rolls, offset checkpoints behind the log).
// The unflushed segments are recovered; what must survive is every
// acknowledged record, the transactions as read_committed sees them, a
// group's committed offset and an idempotent producer's sequence state.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/integration"
)

const crashTopic, crashGroup, crashTxnID = "crashed", "crashed-group", "crashed-txn"

// crashWritten is what writeCrashFixture acknowledged.
type crashWritten struct {
	pid            int64
	epoch          int16
	all, committed []string
	leo            int64
}

// writeCrashFixture writes through the broker at addr, on a topic with
// small segments (the idempotent producer's first batches in rolled
// segments with snapshots at their rolls, its last in the active segment
// a crash leaves unflushed): six idempotent batches of two records, a
// committed, an aborted and a committed transaction, and a group's commit
// at offset 7.
func writeCrashFixture(t *testing.T, addr string) crashWritten {
	t.Helper()
	adm := newAdmin(t, addr)
	segBytes := "400"
	createTopic(t, adm, crashTopic, 1, map[string]*string{"segment.bytes": &segBytes})
	waitLeader(t, addr, crashTopic)
	var w crashWritten
	w.pid, w.epoch = initIdempotent(t, addr)
	raw := newRawProducerAt(t, addr, crashTopic)
	for i := range 6 {
		tag := fmt.Sprintf("p%d", i)
		if code, off := raw.produce(rawBatch(w.pid, w.epoch, int32(2*i), 2, tag)); code != 0 || off != int64(2*i) {
			t.Fatalf("idempotent batch %d: error %d offset %d", i, code, off)
		}
		w.all = append(w.all, tag+"-v0", tag+"-v1")
	}
	w.committed = append(w.committed, w.all...)
	txn(t, addr, crashTxnID, crashTopic, true, "c0", "c1")
	txn(t, addr, crashTxnID, crashTopic, false, "a0")
	txn(t, addr, crashTxnID, crashTopic, true, "c2")
	w.all = append(w.all, "c0", "c1", "a0", "c2")
	w.committed = append(w.committed, "c0", "c1", "c2")
	commitOffset(t, adm, crashGroup, crashTopic, 7)
	w.leo = endOffset(t, addr, crashTopic)
	return w
}

// checkCrashFixture checks w through the broker at addr, the other kind,
// which opened the crashed broker's dir: every record, read_committed, the
// group's offset, the log end, and the idempotent producer's state (a
// retry of its last batch is a duplicate at the original offset, its next
// sequence is accepted).
func checkCrashFixture(t *testing.T, addr string, w crashWritten) {
	t.Helper()
	waitLeader(t, addr, crashTopic)
	checkValues(t, addr, crashTopic, false, w.all)
	checkValues(t, addr, crashTopic, true, w.committed)
	checkOffset(t, addr, crashGroup, crashTopic, 7)
	if got := endOffset(t, addr, crashTopic); got != w.leo {
		t.Errorf("log end offset after the crash: %d, want %d", got, w.leo)
	}
	raw := newRawProducerAt(t, addr, crashTopic)
	if code, off := raw.produce(rawBatch(w.pid, w.epoch, 10, 2, "p5")); code != 0 || off != 10 {
		t.Fatalf("retry of the last idempotent batch: error %d offset %d, want the original offset 10", code, off)
	}
	if code, off := raw.produce(rawBatch(w.pid, w.epoch, 12, 2, "p6")); code != 0 || off != w.leo {
		t.Fatalf("next idempotent batch: error %d offset %d, want %d", code, off, w.leo)
	}
}

func TestKafka39OpensCrashedKbrokerLogDir(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, a kbroker broker and Apache Kafka 3.9")
	}
	z := integration.StartZooKeeper(t)
	logDir := filepath.Join(t.TempDir(), "data")
	kb := startKbrokerOnDir(t, z, "/c", logDir, oneBrokerInternalTopics)
	w := writeCrashFixture(t, kb.Addr())
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
	checkCrashFixture(t, kf.Addr(), w)
	// A crash leaves unflushed segments, which Kafka recovers; nothing it
	// finds may be invalid or corrupt.
	out := kf.out.String()
	for _, bad := range []string{"Found invalid messages", "CorruptRecordException", "CorruptSnapshotException",
		"Failed to load producer snapshot", "InconsistentTopicId", "Malformed line", "Error while"} {
		if strings.Contains(out, bad) {
			t.Errorf("Kafka 3.9 logged %q on the dir of a crashed kbroker:\n%s", bad, grepLines(out, bad))
		}
	}
	t.Logf("Kafka 3.9's recovery of %s-0:\n%s", crashTopic, grepLines(grepLines(out, crashTopic+"-0"), "Recovering unflushed segment"))
}

// TestKbrokerOpensCrashedKafka39LogDir is the other way: Kafka 3.9 is
// killed with SIGKILL and kbroker opens its dir (kbroker waits for the old
// registration to expire by itself).
func TestKbrokerOpensCrashedKafka39LogDir(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker broker")
	}
	z := integration.StartZooKeeper(t)
	logDir := filepath.Join(t.TempDir(), "data")
	kf := startKafka39Dir(t, z, "/k", 1, logDir)
	w := writeCrashFixture(t, kf.Addr())
	kf.kill()

	// kbroker waits up to twice its own session timeout for the old
	// registration to go; the killed Kafka's session lasts up to the
	// harness ZooKeeper's 10 s cap (maxSessionTimeout), past the 8 s that
	// the harness's 4 s session gives: 6 s makes the wait 12 s.
	kb := startKbrokerOnDir(t, z, "/k", logDir, map[string]string{"zookeeper.session.timeout.ms": "6000"})
	checkCrashFixture(t, kb.Addr(), w)
	t.Logf("kbroker on the dir of a crashed Kafka:\n%s", grepLines(kb.Log(), crashTopic))
}
