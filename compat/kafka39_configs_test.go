package compat

// Dynamic broker configs in a mixed cluster (issue 24): kafka-configs
// changes a broker config through either kind, and both kinds apply it.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/integration"
)

// TestKafka39DynamicBrokerConfigsBothKinds: kbroker broker 1 (the
// controller) and Kafka 3.9 broker 2 on one ZooKeeper chroot, a topic led
// by each. Kafka's kafka-configs tool sets the cluster-wide default
// message.max.bytes=2000 through kbroker: both kinds then refuse a
// 3000-byte batch with MESSAGE_TOO_LARGE (Kafka from its
// /config/brokers/<default> znode and the change notification kbroker
// wrote). Deleting it through Kafka makes both accept it again (kbroker
// from what Kafka wrote). A per-broker value for broker 1 alone (the tool,
// bootstrapped at Kafka, sends it to broker 1) limits kbroker's topic and
// not Kafka's.
func TestKafka39DynamicBrokerConfigsBothKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, an Apache Kafka 3.9 broker, a kbroker broker and Kafka's tools")
	}
	const chroot = "/mixed-configs"
	z := integration.StartZooKeeper(t)
	kb := startKbrokerController(t, z, chroot)
	kf := startKafka39(t, z, chroot, 2)
	addrs := []string{kb.Addr(), kf.Addr()}
	waitViews(t, "both brokers registered", "controller 1 brokers [1 2]", addrs)
	createAssigned(t, kb.Addr(), "cfg-kb", nil, []int32{1})
	createAssigned(t, kb.Addr(), "cfg-kf", nil, []int32{2})
	bin := filepath.Join(javaDir(t), "bin")
	configs := func(through string, args ...string) {
		t.Helper()
		args = append([]string{"--bootstrap-server", through, "--entity-type", "brokers", "--alter"}, args...)
		if r := runTool(bin, "kafka-configs.sh", "", args); r.err != nil || r.code != 0 {
			t.Fatalf("kafka-configs %s: %s", strings.Join(args, " "), r)
		}
	}
	// fits reports whether a batch of one size-byte record is accepted
	// by the leader of topic (nil) or refused as too large.
	fits := func(topic string, size int) (bool, error) {
		cl := newKgo(t, kb.Addr(), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
		defer cl.Close()
		err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: make([]byte, size)}).FirstErr()
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
			return false, nil
		default:
			return false, err
		}
	}
	want := func(what string, kbFits, kfFits bool) {
		t.Helper()
		deadline := time.Now().Add(kafkaStartTimeout)
		for {
			a, errA := fits("cfg-kb", 3000)
			b, errB := fits("cfg-kf", 3000)
			last := fmt.Sprintf("kbroker's topic takes 3000 bytes: %v (%v); Kafka's: %v (%v)", a, errA, b, errB)
			if errA == nil && errB == nil && a == kbFits && b == kfFits {
				t.Logf("%s: %s", what, last)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: want kbroker's topic %v and Kafka's %v; %s", what, kbFits, kfFits, last)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	want("before any dynamic config", true, true)

	configs(kb.Addr(), "--entity-default", "--add-config", "message.max.bytes=2000")
	want("cluster default message.max.bytes=2000 set through kbroker", false, false)
	configs(kf.Addr(), "--entity-default", "--delete-config", "message.max.bytes")
	want("the cluster default deleted through Kafka", true, true)
	configs(kf.Addr(), "--entity-name", "1", "--add-config", "message.max.bytes=2000")
	want("message.max.bytes=2000 for broker 1 alone", false, true)
}
