package compat

// The client matrix on a cluster: every client creates a topic and uses it
// at once (freshTopic), then produces and consumes through a leader's
// SIGKILL on three kbroker processes joined by a real ZooKeeper
// (integration's harness), with RF=3 and min.insync.replicas=2.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// capFailover is the matrix column of TestMatrixClusterFailover.
const capFailover = "cluster failover"

// TestMatrixClusterFailover: for each client, on its own topic (3
// partitions, RF=3): produce a first batch; SIGKILL the leader of a
// partition (never the client's bootstrap broker nor the controller) and
// at once produce a second batch, which the client must deliver by finding
// the new leaders itself (its first metadata still names the dead broker until the
// controller notices the lost ZooKeeper session); restart the broker, wait
// for the full ISR, and consume in a group: exactly the acknowledged
// records, each once.
func TestMatrixClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("long: a ZooKeeper and three brokers")
	}
	z := integration.StartZooKeeper(t)
	bs := integration.StartCluster(t, z, 3, map[string]string{
		"default.replication.factor": "3",
		"min.insync.replicas":        "2",
	})
	boot := bs[0]
	adm := kadm.NewClient(newKgo(t, boot.Addr(), kgo.MetadataMinAge(10*time.Millisecond)))
	waitFor(t, 60*time.Second, "three live brokers", func() bool {
		m, err := adm.BrokerMetadata(context.Background())
		return err == nil && len(m.Brokers) == 3 && m.Controller >= 0
	})
	cases := []struct {
		name    string
		version func(t *testing.T) string
		client  func(t *testing.T) matrixClient
		idem    bool
	}{
		{"franz-go (kgo, kadm)", func(*testing.T) string {
			return moduleVersion("github.com/twmb/franz-go") + " (kadm " + moduleVersion("github.com/twmb/franz-go/pkg/kadm") + ")"
		}, func(*testing.T) matrixClient { return &franzClient{} }, true},
		{"IBM/sarama", func(*testing.T) string { return moduleVersion("github.com/IBM/sarama") },
			func(*testing.T) matrixClient { return &saramaClient{} }, true},
		{"segmentio/kafka-go", func(*testing.T) string { return moduleVersion("github.com/segmentio/kafka-go") },
			func(*testing.T) matrixClient { return &kafkaGoClient{} }, false},
		{"confluent-kafka-go", func(*testing.T) string { return confluentGoVersion() }, func(*testing.T) matrixClient { return &confluentGoClient{} }, true},
		{"kcat", kcatVersion, func(t *testing.T) matrixClient { kcatPath(t); return &kcatClient{} }, true},
		{"kafka-python", nil, func(t *testing.T) matrixClient {
			return pythonClient(t, "kafka_python_client.py", "kafka", "python3-kafka")
		}, false},
		{"confluent-kafka python", nil, func(t *testing.T) matrixClient {
			return pythonClient(t, "confluent_kafka_client.py", "confluent_kafka", "python3-confluent-kafka")
		}, true},
		{"kafkajs", nil, func(t *testing.T) matrixClient { return kafkajsClient(t) }, true},
		{javaClientName, nil, func(t *testing.T) matrixClient { return newJavaClient(t, javaMod44) }, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.client(t)
			version := ""
			switch {
			case tc.version != nil:
				version = tc.version(t)
			default:
				version = c.(interface{ version(*testing.T) string }).version(t)
			}
			recordCap(t, tc.name, version, capFailover)
			topic := fmt.Sprintf("failover-%d", i)
			resp, err := adm.CreateTopic(testCtx(t), 3, 3, nil, topic)
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				t.Fatalf("CreateTopic %s: %v", topic, err)
			}
			waitFullISR(t, adm, topic)
			c.setAddr(boot.Addr())

			keys := func(batch string) []string {
				var ks []string
				for j := range 30 {
					ks = append(ks, fmt.Sprintf("%s-%02d", batch, j))
				}
				return ks
			}
			freshTopic(t, c, tc.name == "kcat", i, tc.idem, keys("f")) // kcat has no admin API
			acked := c.produce(t, topic, "none", tc.idem, keys("a"))

			victim := leaderOtherThan(t, adm, bs, topic, boot)
			victim.Kill()
			defer func() { // the next client needs three brokers
				if !victim.Running() {
					victim.Restart()
				}
			}()
			t.Logf("SIGKILLed broker %d, a leader of %s", victim.ID, topic)
			acked = append(acked, c.produce(t, topic, "none", tc.idem, keys("b"))...)
			victim.Restart()
			waitFullISR(t, adm, topic)

			// The log, read to its end: every acknowledged record is there
			// at the offset it was acknowledged with (where the client
			// says), and only an idempotent producer's log has no
			// duplicate (a plain producer's retry may write twice).
			ends, err := adm.ListEndOffsets(testCtx(t), topic)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			ends.Each(func(o kadm.ListedOffset) { total += int(o.Offset) })
			log := consumeN(t, boot.Addr(), topic, 3, total)
			at := map[[2]int64]string{}
			count := map[string]int{}
			for _, r := range log {
				at[[2]int64{int64(r.Partition), r.Offset}] = string(r.Key)
				count[string(r.Key)]++
			}
			for _, a := range acked {
				if count[a.Key] == 0 {
					t.Errorf("acknowledged record %s (partition %d offset %d) is not in the log", a.Key, a.Partition, a.Offset)
				}
				if a.Offset >= 0 && at[[2]int64{int64(a.Partition), a.Offset}] != a.Key {
					t.Errorf("acknowledged %s at partition %d offset %d, the log has %q there", a.Key, a.Partition, a.Offset, at[[2]int64{int64(a.Partition), a.Offset}])
				}
			}
			for k, n := range count {
				if n > 1 && tc.idem {
					t.Errorf("%s written %d times by an idempotent producer", k, n)
				}
			}
			if len(acked) != 60 || len(count) != 60 {
				t.Errorf("%d records acknowledged, %d distinct in the log: want 60 of each", len(acked), len(count))
			}

			// The client's group reads the whole log, each record once.
			got := c.consume(t, topic, "failover-group", "", total)
			seen := map[[2]int64]bool{}
			read := map[string]int{}
			for _, r := range got {
				pos := [2]int64{int64(r.Partition), r.Offset}
				if r.Offset >= 0 && seen[pos] {
					t.Errorf("the group read partition %d offset %d twice", r.Partition, r.Offset)
				}
				seen[pos] = true
				read[r.Key]++
			}
			for k, n := range count {
				if read[k] != n {
					t.Errorf("the group read %s %d times, the log has it %d times", k, read[k], n)
				}
			}
		})
	}
}

// freshTopic runs, through the client alone and with no wait between the
// steps, what test suites and tools do with a new topic: the client's admin
// creates, lists, describes and deletes one (where it has an admin API),
// then it creates another, produces to it and consumes it in a group at
// once. Kafka's CreateTopics answers once the receiving broker's metadata
// has a leader for every partition, and so must kbroker's.
func freshTopic(t *testing.T, c matrixClient, noAdmin bool, i int, idem bool, keys []string) {
	t.Helper()
	if !noAdmin {
		c.admin(t, fmt.Sprintf("fresh-admin-%d", i))
	}
	topic := fmt.Sprintf("fresh-%d", i)
	c.createTopic(t, topic, 3, 3)
	acked := c.produce(t, topic, "none", idem, keys)
	got := c.consume(t, topic, "fresh-group", "", len(keys))
	read := map[string]bool{}
	for _, r := range got {
		read[r.Key] = true
	}
	for _, a := range acked {
		if !read[a.Key] {
			t.Errorf("fresh topic %s: acknowledged %s was not consumed", topic, a.Key)
		}
	}
	if len(acked) != len(keys) || len(read) != len(keys) {
		t.Errorf("fresh topic %s: %d acknowledged, %d distinct consumed, want %d", topic, len(acked), len(read), len(keys))
	}
}

// waitFullISR waits until the bootstrap broker's metadata lists three live
// brokers (the next CreateTopics counts them, as Kafka's ZooKeeper mode
// does, from the cache the controller fills) and every partition of topic
// has a leader and all three replicas in its ISR.
func waitFullISR(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	waitFor(t, 90*time.Second, "three live brokers and a full ISR of "+topic, func() bool {
		m, err := adm.Metadata(context.Background(), topic)
		if err != nil || len(m.Brokers) != 3 {
			return false
		}
		td, ok := m.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
}

// leaderOtherThan returns a broker leading a partition of topic that is
// neither boot nor the controller: kafkajs asks the controller for an
// idempotent producer's id, so killing the controller would test its
// failover, which integration's controller bounces cover, rather than the
// client's re-routing to new leaders. With three partitions over three
// brokers one broker qualifies.
func leaderOtherThan(t *testing.T, adm *kadm.Client, bs []*integration.BrokerProc, topic string, boot *integration.BrokerProc) *integration.BrokerProc {
	t.Helper()
	m, err := adm.Metadata(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Topics[topic].Partitions.Sorted() {
		if p.Leader == boot.ID || p.Leader == m.Controller {
			continue
		}
		for _, b := range bs {
			if b.ID == p.Leader {
				return b
			}
		}
	}
	t.Fatalf("every partition of %s is led by the bootstrap broker %d or the controller %d", topic, boot.ID, m.Controller)
	return nil
}
