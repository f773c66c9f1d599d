package compat

// Kafka's own operator tools on a mixed cluster (issue 24):
// kafka-reassign-partitions and kafka-leader-election, with either kind as
// the controller.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/integration"
)

// TestKafka39ToolsUnderEitherController: one kbroker and one Kafka 3.9
// broker on a ZooKeeper chroot, broker 1 (the first, so the controller) of
// one kind and broker 2 of the other, both ways round. Kafka's
// kafka-reassign-partitions moves a topic's only replica from broker 2 to
// broker 1 and back (--execute, then --verify until complete), every
// acknowledged record readable from its new home each time; it gives a
// replicated topic led by broker 2 the preferred order [1 2], and
// kafka-leader-election --election-type PREFERRED moves its leadership to
// broker 1, then back the same way. Last, under an acks=all producer,
// broker 1 (the controller, and led's leader again) is killed with SIGKILL:
// broker 2 becomes the controller and the leader with every acknowledged
// record. Every step waits until the brokers' Metadata show the result.
func TestKafka39ToolsUnderEitherController(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9, kbroker and Kafka's tools")
	}
	for _, kafkaController := range []bool{false, true} {
		name := "kbroker controller"
		if kafkaController {
			name = "Kafka controller"
		}
		t.Run(name, func(t *testing.T) { toolsOnMixedPair(t, kafkaController) })
	}
}

// toolsOnMixedPair runs TestKafka39ToolsUnderEitherController's steps with
// Kafka (kafkaController) or kbroker as broker 1.
func toolsOnMixedPair(t *testing.T, kafkaController bool) {
	chroot := "/tools-kbroker-controller"
	if kafkaController {
		chroot = "/tools-kafka-controller"
	}
	z := integration.StartZooKeeper(t)
	var one, two string // the brokers' addresses
	var killOne func()  // kill -9 of broker 1
	if kafkaController {
		kf := startKafka39(t, z, chroot, 1)
		one = kf.Addr()
		waitFor(t, kafkaStartTimeout, "Kafka to be the controller", func() bool {
			m, err := newAdmin(t, one).BrokerMetadata(testCtx(t))
			return err == nil && m.Controller == 1
		})
		two = startKbrokerID(t, z, chroot, 2, nil).Addr()
		killOne = func() {
			if err := killProcGroup(kf.cmd); err != nil {
				t.Fatalf("kill -9 of Kafka: %v", err)
			}
			<-kf.done
		}
	} else {
		kb := startKbrokerController(t, z, chroot)
		one = kb.Addr()
		two = startKafka39(t, z, chroot, 2).Addr()
		killOne = kb.Kill
	}
	addrs := []string{one, two}
	waitViews(t, "both brokers registered", "controller 1 brokers [1 2]", addrs)
	view := func(topic string, leader int32, replicas, isr string) string {
		return fmt.Sprintf("controller 1 brokers [1 2]; %s-0 leader %d replicas %s isr %s", topic, leader, replicas, isr)
	}
	bin := filepath.Join(javaDir(t), "bin")
	tool := func(name string, args ...string) string {
		t.Helper()
		r := runTool(bin, name, "", append([]string{"--bootstrap-server", two}, args...))
		if r.err != nil || r.code != 0 {
			t.Fatalf("%s %s: %s", name, strings.Join(args, " "), r)
		}
		return r.stdout
	}
	reassign := func(topic string, replicas string) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "reassign.json")
		plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":%s}]}`, topic, replicas)
		if err := os.WriteFile(file, []byte(plan), 0o644); err != nil {
			t.Fatal(err)
		}
		tool("kafka-reassign-partitions.sh", "--reassignment-json-file", file, "--execute")
		var out string
		waitFor(t, kafkaStartTimeout, fmt.Sprintf("kafka-reassign-partitions --verify of %s to %s", topic, replicas), func() bool {
			out = tool("kafka-reassign-partitions.sh", "--reassignment-json-file", file, "--verify")
			return strings.Contains(out, fmt.Sprintf("Reassignment of partition %s-0 is completed", topic))
		})
	}
	// elect runs a preferred election. "Valid replica already elected"
	// passes too: a controller's auto leader rebalance (Kafka's first check
	// runs 5 s after it takes over) may have moved the leader to the
	// preferred replica between the reassignment and the tool; the caller's
	// waitViews checks the leader either way.
	elect := func(topic string) {
		t.Helper()
		out := tool("kafka-leader-election.sh", "--election-type", "PREFERRED", "--topic", topic, "--partition", "0")
		if !strings.Contains(out, "Successfully completed leader election (PREFERRED) for partitions "+topic+"-0") &&
			!strings.Contains(out, "Valid replica already elected for partitions "+topic+"-0") {
			t.Fatalf("kafka-leader-election: %s", out)
		}
	}

	// A replica moved between the kinds and back.
	createAssigned(t, one, "moving", nil, []int32{2})
	waitViews(t, "moving on broker 2", view("moving", 2, "[2]", "[2]"), addrs, "moving")
	want := produceAcked(t, addrs, "moving", "a", 50)
	reassign("moving", "[1]")
	waitViews(t, "moving on broker 1", view("moving", 1, "[1]", "[1]"), addrs, "moving")
	want = append(want, produceAcked(t, addrs, "moving", "b", 50)...)
	checkValues(t, one, "moving", false, want)
	reassign("moving", "[2]")
	waitViews(t, "moving back on broker 2", view("moving", 2, "[2]", "[2]"), addrs, "moving")
	want = append(want, produceAcked(t, addrs, "moving", "c", 50)...)
	checkValues(t, two, "moving", false, want)

	// Leadership moved between the kinds by a preferred election.
	createAssigned(t, one, "led", nil, []int32{2, 1})
	waitViews(t, "led by broker 2", view("led", 2, "[2 1]", "[1 2]"), addrs, "led")
	want = produceAcked(t, addrs, "led", "a", 50)
	reassign("led", "[1,2]")
	elect("led")
	waitViews(t, "led by broker 1", view("led", 1, "[1 2]", "[1 2]"), addrs, "led")
	want = append(want, produceAcked(t, addrs, "led", "b", 50)...)
	reassign("led", "[2,1]")
	elect("led")
	waitViews(t, "led by broker 2 again", view("led", 2, "[2 1]", "[1 2]"), addrs, "led")
	want = append(want, produceAcked(t, addrs, "led", "c", 50)...)
	checkValues(t, one, "led", false, want)

	// kill -9 of broker 1, the controller and a follower of led, under
	// acks=all load, after a preferred election made it led's leader: broker
	// 2, of the other kind, becomes the controller and the leader, with
	// every acknowledged record.
	reassign("led", "[1,2]")
	elect("led")
	waitViews(t, "led by broker 1 before the kill", view("led", 1, "[1 2]", "[1 2]"), addrs, "led")
	load := startAckedProducer(t, addrs, "led", 1)
	load.waitProgress(t, "before the kill", 100)
	killOne()
	waitViews(t, "broker 2 alone, the controller and led's leader",
		"controller 2 brokers [2]; led-0 leader 2 replicas [1 2] isr [2]", []string{two}, "led")
	load.waitProgress(t, "after the kill", 100)
	acks := load.stop(t)
	slices.SortFunc(acks, func(a, b ack) int { return int(a.offset - b.offset) })
	for _, a := range acks {
		want = append(want, a.value)
	}
	checkValues(t, two, "led", false, want)
}
