package replica

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller"
)

// partitionDirs lists the partition directories under broker id's log
// dir, but for those of deleted logs (renamed "-delete", removed later).
func (c *testCluster) partitionDirs(id int32) []string {
	c.t.Helper()
	ents, err := os.ReadDir(filepath.Join(c.broker(id).dir, "data"))
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasSuffix(e.Name(), "-delete") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// TestClusterBrokerCreatesOnlyHostedLogs: a broker of a ZooKeeper cluster
// holds logs of its own replicas only, as Kafka's do. Starting with topics
// in the metadata creates no log; a LeaderAndIsr for one partition creates
// that partition's log, not its siblings' (also for a topic the broker
// learns of only then); StopReplica with delete removes it and the topic
// is forgotten; a later LeaderAndIsr makes the replica again.
func TestClusterBrokerCreatesOnlyHostedLogs(t *testing.T) {
	c := newTestCluster(t, 0, fastRC(10*time.Second), false, 1)
	c.zk = true
	c.topic.Partitions = 3
	b := c.start(1, t.TempDir())
	c.mu.Lock()
	c.brokers[1] = b
	c.mu.Unlock()
	if got := c.partitionDirs(1); len(got) != 0 {
		t.Fatalf("after start: partition dirs %q, want none (no replica assigned yet)", got)
	}
	if p := b.m.PartitionOf("t", 0); p == nil || p.Hosted() || p.IsLeader() {
		t.Fatalf("t-0 before any LeaderAndIsr: %+v, want a known partition without a replica here", p)
	}

	c.elect(1, 1, []int32{1}, []int32{1}, 1)
	if got := c.partitionDirs(1); !slices.Equal(got, []string{"t-1"}) {
		t.Fatalf("after a LeaderAndIsr for t-1: partition dirs %q, want [t-1]", got)
	}
	if res := c.produce(1, 1, -1, "v", 10*time.Second); res.Err != nil {
		t.Fatalf("produce to t-1: %v", res.Err)
	}
	if n := len(b.m.AllPartitions()); n != 1 {
		t.Fatalf("AllPartitions: %d, want the 1 hosted", n)
	}

	// A topic created after the broker started: growTopicLocked's path.
	u := controller.Topic{Name: "u", ID: controller.NewTopicID(), Partitions: 4, ReplicationFactor: 1}
	if err := b.store.CreateTopic(u); err != nil {
		t.Fatal(err)
	}
	st := PartitionState{Leader: 1, LeaderEpoch: 0, ControllerEpoch: 1, ISR: []int32{1}, Replicas: []int32{1}}
	if err := b.m.MakeLeader("u", 2, u.ID, st); err != nil {
		t.Fatal(err)
	}
	if got := c.partitionDirs(1); !slices.Equal(got, []string{"t-1", "u-2"}) {
		t.Fatalf("after a LeaderAndIsr for u-2: partition dirs %q, want [t-1 u-2]", got)
	}

	// StopReplica of a partition never hosted, then with delete of the
	// hosted one: the topic is forgotten once nothing of it is left.
	if err := b.m.StopReplica("u", 0, true); err != nil {
		t.Fatalf("StopReplica of an absent partition: %v", err)
	}
	if err := b.m.StopReplica("u", 2, true); err != nil {
		t.Fatal(err)
	}
	if err := b.m.StopReplica("u", 2, true); err != nil {
		t.Fatalf("StopReplica again: %v", err)
	}
	if b.m.TopicByName("u") != nil {
		t.Fatal("topic u still registered after its only replica here was deleted")
	}
	if err := b.m.MakeFollower("u", 3, u.ID, PartitionState{Leader: 2, LeaderEpoch: 0, ControllerEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{2, 1}}); err != nil {
		t.Fatal(err)
	}
	if got := c.partitionDirs(1); !slices.Equal(got, []string{"t-1", "u-3"}) {
		t.Fatalf("after a LeaderAndIsr for u-3: partition dirs %q, want [t-1 u-3]", got)
	}

	// A restart opens what is on disk and creates nothing else.
	b = c.restart(1)
	if got := c.partitionDirs(1); !slices.Equal(got, []string{"t-1", "u-3"}) {
		t.Fatalf("after a restart: partition dirs %q, want [t-1 u-3]", got)
	}
	if p := b.m.PartitionOf("t", 1); p == nil || !p.Hosted() {
		t.Fatalf("t-1 after the restart: %+v, want it hosted", p)
	}
}
