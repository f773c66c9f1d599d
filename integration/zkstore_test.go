package integration

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkstore"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The ZooKeeper store as two brokers of one cluster see it.
func TestZooKeeperStore(t *testing.T) {
	z := StartZooKeeper(t)
	a, b := startNode(t, z, 1), startNode(t, z, 2)
	sa, err := zkstore.Open(a.zk, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := zkstore.Open(b.zk, 2, "ignored-cluster-id")
	if err != nil {
		t.Fatal(err)
	}
	if sa.ClusterID() == "" || sb.ClusterID() != sa.ClusterID() {
		t.Fatalf("cluster ids %q %q", sa.ClusterID(), sb.ClusterID())
	}

	if err := sa.CreateTopic(controller.Topic{Name: "t", Partitions: 4, ReplicationFactor: 3}); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("RF 3 on 2 brokers: %v", err)
	}
	if err := sa.CreateTopic(controller.Topic{Name: "t", Partitions: 4, ReplicationFactor: 2, Configs: map[string]string{"retention.ms": "1000"}}); err != nil {
		t.Fatal(err)
	}
	if err := sb.CreateTopic(controller.Topic{Name: "t", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, controller.ErrTopicExists) {
		t.Fatalf("second create: %v", err)
	}
	got, ok := sb.Topic("t")
	if !ok || got.Partitions != 4 || got.ReplicationFactor != 2 || got.ID == ([16]byte{}) || got.Configs["retention.ms"] != "1000" {
		t.Fatalf("topic %+v", got)
	}
	asg, _, err := a.zk.TopicAssignment("t")
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for _, rs := range asg.Partitions {
		if len(rs) != 2 || rs[0] == rs[1] {
			t.Fatalf("assignment %v", asg.Partitions)
		}
		leaders[rs[0]]++
	}
	if leaders[1] != 2 || leaders[2] != 2 {
		t.Fatalf("leaders not spread: %v", asg.Partitions)
	}
	if err := sa.AddPartitions("t", 6); err != nil {
		t.Fatal(err)
	}
	if err := sa.AddPartitions("t", 5); err == nil {
		t.Fatal("shrinking accepted")
	}
	if got, _ := sb.Topic("t"); got.Partitions != 6 {
		t.Fatalf("after AddPartitions: %+v", got)
	}
	if err := sb.UpdateTopicConfigs("t", map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := sa.Topic("t"); !reflect.DeepEqual(got.Configs, map[string]string{"cleanup.policy": "compact"}) {
		t.Fatalf("configs %v", got.Configs)
	}
	if names := sa.Topics(); len(names) != 1 || names[0].Name != "t" {
		t.Fatalf("topics %v", names)
	}

	// Producer id blocks from two brokers never overlap.
	seen := map[int64]bool{}
	for i := 0; i < 6; i++ {
		s := sa
		if i%2 == 1 {
			s = sb
		}
		first, err := s.NextProducerIDBlock(1000)
		if err != nil {
			t.Fatal(err)
		}
		if seen[first] || first%1000 != 0 {
			t.Fatalf("block %d handed out twice or misaligned", first)
		}
		seen[first] = true
	}

	cred := controller.ScramCredential{Salt: []byte("salt"), StoredKey: []byte("stored"), ServerKey: []byte("server"), Iterations: 4096}
	if err := sa.AlterScramCredentials([]controller.ScramChange{{User: "alice smith", Mechanism: "SCRAM-SHA-256", Credential: cred}}); err != nil {
		t.Fatal(err)
	}
	if c, ok := sb.ScramCredential("alice smith", "SCRAM-SHA-256"); !ok || !reflect.DeepEqual(c, cred) {
		t.Fatalf("credential %+v %v", c, ok)
	}
	if m := rawJSON(t, a.zk, "/config/users/alice%20smith"); m["config"].(map[string]any)["SCRAM-SHA-256"] != zkstore.EncodeScram(cred) {
		t.Fatalf("user config %v", m)
	}
	if err := sb.AlterScramCredentials([]controller.ScramChange{{User: "bob", Mechanism: "SCRAM-SHA-512", Delete: true}}); err == nil {
		t.Fatal("deleting a missing credential accepted")
	}
	if all := sb.ScramCredentials(); len(all) != 1 || len(all["alice smith"]) != 1 {
		t.Fatalf("credentials %v", all)
	}

	// Deletion goes through the controller.
	if err := sb.DeleteTopic("nope"); !errors.Is(err, controller.ErrUnknownTopic) {
		t.Fatalf("deleting an unknown topic: %v", err)
	}
	if err := sb.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the controller to delete the topic", func() (bool, error) {
		_, ok := sa.Topic("t")
		return !ok, nil
	})
}
