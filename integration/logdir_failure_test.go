package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/integration/history"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLogDirFailure: broker 1 has two log dirs and leads every partition
// of an RF 3 topic (min.insync.replicas=2) whose logs lie in both; one dir
// fails (EIO on its writes, the disk-fault hook limited to that dir) under
// an acks=all idempotent producer. As Kafka 3.9 in ZooKeeper mode: the
// broker keeps running, writes /log_dir_event_notification, the controller
// asks it about its replicas, takes those answered KAFKA_STORAGE_ERROR as
// offline: each partition of the failed dir gets a leader among brokers 2
// and 3, loses broker 1 from its ISR and lists it in offline replicas,
// while the partitions of the healthy dir stay led by broker 1. The
// notification is deleted, production goes on to every partition, and
// once broker 1 restarts with a healthy dir it rejoins every ISR; every
// acknowledged record is read back exactly once, in order.
func TestLogDirFailure(t *testing.T) {
	const topic = "dirs"
	const parts = 4
	z := StartZooKeeper(t)
	bs := StartClusterFunc(t, z, 3, func(b *BrokerProc) map[string]string {
		props := map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3",
			"unclean.leader.election.enable": "false", "replica.lag.time.max.ms": "3000"}
		if b.ID == 1 {
			b.FaultFS = true
			props["log.dirs"] = filepath.Join(b.Dir, "data-a") + "," + filepath.Join(b.Dir, "data-b")
		}
		return props
	})
	b1 := bs[0]
	waitClusterFormed(t, bs, 3)
	createTopicAssigned(t, bs[0].Addr(), topic, parts, []int32{1, 2, 3})
	waitFullISR(t, bs, topic, 3)
	// Where broker 1 put each partition: both dirs must hold some.
	inDir := map[int32]string{}
	for p := int32(0); p < parts; p++ {
		for _, d := range []string{"data-a", "data-b"} {
			if _, err := os.Stat(filepath.Join(b1.Dir, d, fmt.Sprintf("%s-%d", topic, p))); err == nil {
				inDir[p] = d
			}
		}
	}
	var failed, healthy []int32
	for p := int32(0); p < parts; p++ {
		if inDir[p] == "data-a" {
			failed = append(failed, p)
		} else {
			healthy = append(healthy, p)
		}
	}
	if len(failed) == 0 || len(healthy) == 0 {
		t.Fatalf("broker 1 placed the partitions %v: want some in each dir", inDir)
	}
	t.Logf("broker 1: partitions %v in data-a (to fail), %v in data-b", failed, healthy)

	ch := history.New()
	p := startProducer(t, bs, topic, ch)
	p.waitAcked(t, 200, "records acknowledged before the dir fails")
	if err := b1.SetDisk("eio " + filepath.Join(b1.Dir, "data-a")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 45*time.Second, "the failed dir's partitions led elsewhere, broker 1 offline in them", func() (bool, error) {
		for _, b := range bs {
			ps, err := partitionsOf(b.Addr(), topic)
			if err != nil {
				return false, err
			}
			for _, pp := range ps {
				if slices.Contains(failed, pp.Partition) {
					if pp.Leader < 2 || slices.Contains(pp.ISR, 1) || !slices.Equal(pp.OfflineReplicas, []int32{1}) || len(pp.ISR) != 2 {
						return false, fmt.Errorf("broker %d sees %s-%d leader %d isr %v offline %v", b.ID, topic, pp.Partition, pp.Leader, pp.ISR, pp.OfflineReplicas)
					}
				} else if pp.Leader != 1 || len(pp.OfflineReplicas) != 0 {
					return false, fmt.Errorf("broker %d sees healthy %s-%d leader %d offline %v", b.ID, topic, pp.Partition, pp.Leader, pp.OfflineReplicas)
				}
			}
		}
		return true, nil
	})
	if !b1.Running() {
		t.Fatal("broker 1 stopped: one of its two log dirs failed, it must keep serving the other")
	}
	if log := b1.Log(); strings.Count(log, "log dir taken offline") != 1 || !strings.Contains(log, "its replicas stopped, telling the controller") {
		t.Errorf("broker 1 did not log the one dir going offline and its log dir event")
	}
	zc := dial(t, z.Addr+"/kbroker")
	waitFor(t, 10*time.Second, "the log dir event notification deleted", func() (bool, error) {
		names, _, err := zc.Children(zkdata.LogDirEventPath)
		return err == nil && len(names) == 0, fmt.Errorf("children %v: %v", names, err)
	})
	// acks=all production reaches every partition (the producer spreads
	// its records over all of them).
	from := ackedPerPartition(ch, topic)
	waitFor(t, 45*time.Second, "acks=all production on every partition after the failure", func() (bool, error) {
		now := ackedPerPartition(ch, topic)
		for p := int32(0); p < parts; p++ {
			if now[p] < from[p]+20 {
				return false, fmt.Errorf("%s-%d: %d acknowledged since", topic, p, now[p]-from[p])
			}
		}
		return true, nil
	})

	// A restart with a healthy dir: broker 1 rejoins every ISR.
	if err := b1.SetDisk("ok"); err != nil {
		t.Fatal(err)
	}
	b1.Kill()
	b1.Restart()
	waitFullISR(t, bs, topic, 3)
	p.waitAcked(t, 200, "records acknowledged after the restart")
	p.close(t)
	checkHistory(t, bs, topic, ch, "log dir failure")
}

// ackedPerPartition counts the acknowledged records of each partition of
// topic.
func ackedPerPartition(ch *history.Checker, topic string) map[int32]int {
	n := map[int32]int{}
	for _, r := range ch.AckedRecords() {
		if r.Topic == topic {
			n[r.Partition]++
		}
	}
	return n
}

// createTopicAssigned creates topic with every partition on replicas (the
// first the preferred leader) through the broker at addr.
func createTopicAssigned(tb testing.TB, addr, topic string, partitions int32, replicas []int32) {
	tb.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := int32(0); p < partitions; p++ {
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: replicas})
	}
	ct.Topics = append(ct.Topics, rt)
	r, err := send(addr, ct)
	if err != nil {
		tb.Fatalf("CreateTopics %s: %v", topic, err)
	}
	if c := r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != 0 {
		tb.Fatalf("CreateTopics %s: error %d", topic, c)
	}
}
