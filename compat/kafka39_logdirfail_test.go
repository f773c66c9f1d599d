package compat

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/integration"
)

// TestKafka39ControllerMovesOffKbrokerFailedDir: an Apache Kafka 3.9
// broker (1) is the controller; kbroker broker 2 has two log dirs and
// leads one single-partition topic in each (replicas [2 1]). One of
// kbroker's dirs fails (EIO on its writes, cmd/kbroker's disk-fault hook
// limited to that dir): kbroker keeps running and writes
// /log_dir_event_notification; Kafka's controller asks it about its
// replicas, gets KAFKA_STORAGE_ERROR for the failed dir's partition and
// moves that leadership to Kafka (ISR [1], kbroker listed offline), while
// the other partition stays led by kbroker. acks=all writes go on to both,
// and everything acknowledged is read back in order.
func TestKafka39ControllerMovesOffKbrokerFailedDir(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker broker")
	}
	const chroot, x, y = "/logdirfail", "dir-x", "dir-y"
	z := integration.StartZooKeeper(t)
	kf := startKafka39(t, z, chroot, 1)
	kb := integration.StartClusterFunc(t, z, 1, func(b *integration.BrokerProc) map[string]string {
		b.FaultFS = true
		return map[string]string{
			"broker.id": "2", "zookeeper.connect": z.Addr + chroot,
			"log.dirs": filepath.Join(b.Dir, "data-a") + "," + filepath.Join(b.Dir, "data-b"),
		}
	})[0]
	addrs := []string{kf.Addr(), kb.Addr()}
	waitViews(t, "both brokers registered", "controller 1 brokers [1 2]", addrs)
	createAssigned(t, kf.Addr(), x, nil, []int32{2, 1})
	createAssigned(t, kf.Addr(), y, nil, []int32{2, 1})
	full := "controller 1 brokers [1 2]; " + x + "-0 leader 2 replicas [2 1] isr [1 2]; " + y + "-0 leader 2 replicas [2 1] isr [1 2]"
	waitViews(t, "kbroker leading both, Kafka in both ISRs", full, addrs, x, y)
	xDir := oneTopicPerDir(t, "kbroker", x, y, filepath.Join(kb.Dir, "data-a"), filepath.Join(kb.Dir, "data-b"))
	wantX := produceAcked(t, addrs, x, "x", 50)
	wantY := produceAcked(t, addrs, y, "y", 50)

	if err := kb.SetDisk("eio " + xDir); err != nil {
		t.Fatal(err)
	}
	// The next write to x fails and takes its dir offline; the producer
	// retries KAFKA_STORAGE_ERROR until Kafka leads x.
	wantX = append(wantX, produceAcked(t, addrs, x, "x2", 50)...)
	moved := "controller 1 brokers [1 2]; " + x + "-0 leader 1 replicas [2 1] isr [1]; " + y + "-0 leader 2 replicas [2 1] isr [1 2]"
	waitViews(t, "Kafka's controller moved x off kbroker's failed dir", moved, addrs, x, y)
	if !kb.Running() {
		t.Fatal("kbroker stopped: one of its two log dirs failed, it must keep serving the other")
	}
	wantOfflineReplicas(t, addrs, x, 2)
	wantY = append(wantY, produceAcked(t, addrs, y, "y2", 50)...)
	checkValues(t, kf.Addr(), x, false, wantX)
	checkValues(t, kb.Addr(), y, false, wantY)
}

// TestKbrokerControllerMovesOffKafka39FailedDir is the other way round:
// kbroker broker 1 is the controller, Apache Kafka 3.9 broker 2 has two
// log dirs and leads one single-partition topic in each (replicas [2 1],
// segment.bytes small so that writes roll segments). The partition
// directory of one topic is removed under Kafka: its next segment roll
// fails, Kafka takes that log dir offline and writes
// /log_dir_event_notification; kbroker's controller asks Kafka about its
// replicas, gets KAFKA_STORAGE_ERROR for that partition and moves its
// leadership to kbroker (ISR [1], Kafka listed offline), while the other
// partition stays led by Kafka. Every acknowledged record is read back.
func TestKbrokerControllerMovesOffKafka39FailedDir(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker broker")
	}
	const chroot, x, y = "/logdirfail2", "dir-x", "dir-y"
	z := integration.StartZooKeeper(t)
	kb := startKbrokerController(t, z, chroot)
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
	kf := startKafka39With(t, z, chroot, 2, dirA, map[string]string{"log.dirs": dirA + "," + dirB})
	addrs := []string{kb.Addr(), kf.Addr()}
	waitViews(t, "both brokers registered", "controller 1 brokers [1 2]", addrs)
	small := map[string]string{"segment.bytes": "1024"}
	createAssigned(t, kb.Addr(), x, small, []int32{2, 1})
	createAssigned(t, kb.Addr(), y, small, []int32{2, 1})
	full := "controller 1 brokers [1 2]; " + x + "-0 leader 2 replicas [2 1] isr [1 2]; " + y + "-0 leader 2 replicas [2 1] isr [1 2]"
	waitViews(t, "Kafka leading both, kbroker in both ISRs", full, addrs, x, y)
	failed := oneTopicPerDir(t, "Kafka", x, y, dirA, dirB)
	wantX := produceAcked(t, addrs, x, "x", 20)
	wantY := produceAcked(t, addrs, y, "y", 20)

	if err := os.RemoveAll(filepath.Join(failed, x+"-0")); err != nil {
		t.Fatal(err)
	}
	wantX = append(wantX, produceAcked(t, addrs, x, "x2", 50)...)
	moved := "controller 1 brokers [1 2]; " + x + "-0 leader 1 replicas [2 1] isr [1]; " + y + "-0 leader 2 replicas [2 1] isr [1 2]"
	waitViews(t, "kbroker's controller moved x off Kafka's failed dir", moved, addrs, x, y)
	if !strings.Contains(kf.out.String(), "Stopped serving replicas in dir "+failed) {
		t.Errorf("Kafka did not log its failure of %s (ReplicaManager.handleLogDirFailure)", failed)
	}
	wantOfflineReplicas(t, addrs, x, 2)
	wantY = append(wantY, produceAcked(t, addrs, y, "y2", 20)...)
	checkValues(t, kb.Addr(), x, false, wantX)
	checkValues(t, kf.Addr(), y, false, wantY)
}

// wantOfflineReplicas checks that every broker of addrs lists broker id,
// alone, as the offline replica of partition 0 of topic.
func wantOfflineReplicas(t *testing.T, addrs []string, topic string, id int32) {
	t.Helper()
	for _, a := range addrs {
		m, err := newAdmin(t, a).Metadata(testCtx(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		if off := m.Topics[topic].Partitions[0].OfflineReplicas; !slices.Equal(off, []int32{id}) {
			t.Fatalf("%s: %s-0 offline replicas %v, want [%d]", a, topic, off, id)
		}
	}
}

// oneTopicPerDir returns the log dir among dirs that holds partition 0 of
// topic x, after checking that y's partition 0 is in another of them
// (who placed them: the broker's name in the message).
func oneTopicPerDir(t *testing.T, who, x, y string, dirs ...string) string {
	t.Helper()
	dirOf := func(topic string) string {
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, topic+"-0")); err == nil {
				return d
			}
		}
		return ""
	}
	dx, dy := dirOf(x), dirOf(y)
	if dx == "" || dy == "" || dx == dy {
		t.Fatalf("%s placed %s in %q and %s in %q: want one in each dir", who, x, dx, y, dy)
	}
	return dx
}
