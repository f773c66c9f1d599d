package compat

// Mixed clusters (issue 24): Apache Kafka 3.9 brokers (ZooKeeper mode) and
// kbroker brokers in one cluster on one ZooKeeper chroot, replicating each
// other's partitions with the inter-broker protocol of
// inter.broker.protocol.version (3.9 on both: Kafka's followers send
// Fetch v17).

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/integration"
)

// startKbrokerID starts one kbroker broker with broker.id id on z under
// chroot, plus extra, and returns once it listens.
func startKbrokerID(t *testing.T, z *integration.ZooKeeper, chroot string, id int32, extra map[string]string) *integration.BrokerProc {
	t.Helper()
	bs := integration.StartClusterFunc(t, z, 1, func(*integration.BrokerProc) map[string]string {
		props := map[string]string{
			"broker.id":         strconv.Itoa(int(id)),
			"zookeeper.connect": z.Addr + chroot,
		}
		for k, v := range extra {
			props[k] = v
		}
		return props
	})
	return bs[0]
}

// startKbrokerController starts kbroker broker 1 on z under chroot, the
// first broker there, and waits until it is the controller.
func startKbrokerController(t *testing.T, z *integration.ZooKeeper, chroot string) *integration.BrokerProc {
	t.Helper()
	kb := startKbrokerID(t, z, chroot, 1, nil)
	waitFor(t, kafkaStartTimeout, "kbroker to be the controller", func() bool {
		m, err := newAdmin(t, kb.Addr()).BrokerMetadata(testCtx(t))
		return err == nil && m.Controller == 1
	})
	return kb
}

// clusterView is what one broker's Metadata says of the cluster: the
// controller, the brokers and, per partition of topics, leader, replicas
// and ISR.
func clusterView(t *testing.T, addr string, topics ...string) (string, error) {
	t.Helper()
	m, err := newAdmin(t, addr).Metadata(testCtx(t), topics...)
	if err != nil {
		return "", err
	}
	ids := []int32{}
	for _, b := range m.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	s := fmt.Sprintf("controller %d brokers %v", m.Controller, ids)
	for _, tn := range topics {
		td := m.Topics[tn]
		if td.Err != nil {
			return "", fmt.Errorf("%s: %w", tn, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			s += fmt.Sprintf("; %s-%d leader %d replicas %v isr %v", tn, p.Partition, p.Leader, p.Replicas, isr)
		}
	}
	return s, nil
}

// waitViews waits until every broker at addrs answers Metadata with want.
func waitViews(t *testing.T, what, want string, addrs []string, topics ...string) {
	t.Helper()
	var last []string
	deadline := time.Now().Add(kafkaStartTimeout)
	for {
		last = last[:0]
		ok := true
		for _, a := range addrs {
			v, err := clusterView(t, a, topics...)
			if err != nil {
				v = err.Error()
			}
			last = append(last, a+": "+v)
			ok = ok && v == want
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: brokers never all answered %q:\n%s", what, want, fmt.Sprint(last))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// produceAcked produces n values "<prefix>-<i>" to topic with acks=all,
// one at a time, and returns them: every one was acknowledged.
func produceAcked(t *testing.T, seeds []string, topic, prefix string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for i := range n {
		v := fmt.Sprintf("%s-%d", prefix, i)
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("producing %s to %s: %v", v, topic, err)
		}
		out = append(out, v)
	}
	return out
}

// TestKafka39MixedReplication: a kbroker broker (1, the controller) and an
// Apache Kafka 3.9 broker (2) in one cluster. A topic led by kbroker gets
// Kafka as follower (Kafka's replica fetcher sends Fetch v17 and
// OffsetForLeaderEpoch v4), one led by Kafka gets kbroker as follower;
// both reach a full ISR, so acks=all with min.insync.replicas=2 is
// acknowledged, and both brokers' Metadata agree. Then kbroker (the
// controller and a leader) is killed with SIGKILL: Kafka becomes the
// controller and the leader of both, and serves every acknowledged record
// of both topics, once and in order. kbroker restarts under Kafka's
// controller: it follows Kafka's leaders back into both ISRs (Kafka's
// leader proposes that with AlterPartition; it had addressed kbroker, the
// old controller, which must answer NOT_CONTROLLER for Kafka to look the
// controller up again), a preferred election through Kafka moves one
// leadership to kbroker, and acks=all writes go on under Kafka's
// controller with both kinds leading.
func TestKafka39MixedReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker broker")
	}
	const chroot, kbLed, kfLed = "/mixed", "kbroker-led", "kafka-led"
	z := integration.StartZooKeeper(t)
	kb := startKbrokerController(t, z, chroot)
	kf := startKafka39With(t, z, chroot, 2, t.TempDir(), map[string]string{"replica.fetch.wait.max.ms": "100"})
	addrs := []string{kb.Addr(), kf.Addr()}
	waitViews(t, "both brokers registered", "controller 1 brokers [1 2]", addrs)

	createAssigned(t, kb.Addr(), kbLed, map[string]string{"min.insync.replicas": "2"}, []int32{1, 2})
	createAssigned(t, kb.Addr(), kfLed, map[string]string{"min.insync.replicas": "2"}, []int32{2, 1})
	full := "controller 1 brokers [1 2]; " + kbLed + "-0 leader 1 replicas [1 2] isr [1 2]; " + kfLed + "-0 leader 2 replicas [2 1] isr [1 2]"
	waitViews(t, "both followers in the ISR", full, addrs, kbLed, kfLed)

	start := time.Now()
	wantKb := produceAcked(t, addrs, kbLed, "kb", 200)
	wantKf := produceAcked(t, addrs, kfLed, "kf", 200)
	t.Logf("400 records acknowledged with acks=all in %v", time.Since(start).Round(time.Millisecond))
	waitViews(t, "after the writes", full, addrs, kbLed, kfLed)

	// kill -9 of the controller, leader of kbLed: Kafka takes both over.
	kb.Kill()
	after := "controller 2 brokers [2]; " + kbLed + "-0 leader 2 replicas [1 2] isr [2]; " + kfLed + "-0 leader 2 replicas [2 1] isr [2]"
	waitViews(t, "Kafka alone after kbroker's kill", after, []string{kf.Addr()}, kbLed, kfLed)
	checkValues(t, kf.Addr(), kbLed, false, wantKb)
	checkValues(t, kf.Addr(), kfLed, false, wantKf)

	// kbroker comes back under Kafka's controller: Kafka's LeaderAndIsr
	// makes it a follower of Kafka's leaders (kbroker's fetcher sends
	// Fetch v17), Kafka's leaders take it back into the ISR.
	kb.Restart()
	back := "controller 2 brokers [1 2]; " + kbLed + "-0 leader 2 replicas [1 2] isr [1 2]; " + kfLed + "-0 leader 2 replicas [2 1] isr [1 2]"
	waitViews(t, "kbroker back in both ISRs under Kafka's controller", back, addrs, kbLed, kfLed)

	// A preferred leader election through Kafka's controller moves
	// kbLed's leadership to kbroker, Kafka follows it; acks=all writes
	// go on there.
	res, err := newAdmin(t, kf.Addr()).ElectLeaders(testCtx(t), kadm.ElectPreferredReplica, kadm.TopicsSet{kbLed: {0: {}}})
	if err != nil {
		t.Fatalf("ElectLeaders: %v", err)
	}
	if r := res[kbLed][0]; r.Err != nil {
		t.Fatalf("ElectLeaders of %s-0: %v (%s)", kbLed, r.Err, r.ErrMessage)
	}
	moved := "controller 2 brokers [1 2]; " + kbLed + "-0 leader 1 replicas [1 2] isr [1 2]; " + kfLed + "-0 leader 2 replicas [2 1] isr [1 2]"
	waitViews(t, "kbroker leading again, elected by Kafka's controller", moved, addrs, kbLed, kfLed)
	wantKb = append(wantKb, produceAcked(t, addrs, kbLed, "kb2", 100)...)
	wantKf = append(wantKf, produceAcked(t, addrs, kfLed, "kf2", 100)...)
	waitViews(t, "after the writes under Kafka's controller", moved, addrs, kbLed, kfLed)
	checkValues(t, kb.Addr(), kbLed, false, wantKb)
	checkValues(t, kf.Addr(), kfLed, false, wantKf)
}

// createAssigned creates topic with one partition on replicas (the first
// the preferred leader) and configs, through the broker at addr.
func createAssigned(t *testing.T, addr, topic string, configs map[string]string, replicas ...[]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, r := range replicas {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), newKgo(t, addr))
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = *m
		}
		t.Fatalf("CreateTopics %s: %v (%s)", topic, err, msg)
	}
}

// TestKafka39ReassignUnderKbrokerController: replicas move between the
// kinds with AlterPartitionReassignments through kbroker's controller,
// and a Kafka 3.9 leader changes its ISR with AlterPartition to it.
// Brokers: kbroker 1 (the controller), Kafka 2, kbroker 3. A topic on
// Kafka alone gets kbroker 3 added: Kafka's leader admits it to the ISR
// with an AlterPartition kbroker's controller applies; then the replica
// moves off Kafka to kbroker 3 alone (Kafka gets StopReplica v4, whose
// field order kbroker writes as Kafka reads it), and back to Kafka alone.
// Every record written on the way is there at each end. Last, with both
// replicas again, the Kafka leader is killed with SIGKILL: kbroker's
// controller elects kbroker 3, which has every acknowledged record.
func TestKafka39ReassignUnderKbrokerController(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and two kbroker brokers")
	}
	const chroot, topic = "/mixed-reassign", "moving"
	z := integration.StartZooKeeper(t)
	ctrl := startKbrokerController(t, z, chroot)
	kf := startKafka39With(t, z, chroot, 2, t.TempDir(), map[string]string{"replica.fetch.wait.max.ms": "100"})
	kb := startKbrokerID(t, z, chroot, 3, nil)
	addrs := []string{ctrl.Addr(), kf.Addr(), kb.Addr()}
	waitViews(t, "three brokers registered", "controller 1 brokers [1 2 3]", addrs)
	createAssigned(t, ctrl.Addr(), topic, map[string]string{"min.insync.replicas": "1"}, []int32{2})
	view := func(leader int32, replicas, isr string) string {
		return fmt.Sprintf("controller 1 brokers [1 2 3]; %s-0 leader %d replicas %s isr %s", topic, leader, replicas, isr)
	}
	waitViews(t, "the topic on Kafka", view(2, "[2]", "[2]"), addrs, topic)
	want := produceAcked(t, addrs, topic, "a", 50)

	adm := newAdmin(t, ctrl.Addr())
	reassign := func(replicas ...int32) {
		t.Helper()
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(topic, 0, replicas)
		res, err := adm.AlterPartitionAssignments(testCtx(t), req)
		if err != nil {
			t.Fatalf("AlterPartitionReassignments to %v: %v", replicas, err)
		}
		if err := res.Error(); err != nil {
			t.Fatalf("AlterPartitionReassignments to %v: %v", replicas, err)
		}
	}
	reassign(2, 3)
	waitViews(t, "kbroker 3 added to Kafka's ISR", view(2, "[2 3]", "[2 3]"), addrs, topic)
	if n := strings.Count(ctrl.Log(), "msg=AlterPartition broker=2"); n < 1 {
		t.Errorf("kbroker's controller applied no AlterPartition of Kafka's:\n%s", grepLines(ctrl.Log(), "AlterPartition"))
	}
	want = append(want, produceAcked(t, addrs, topic, "b", 50)...)
	reassign(3)
	waitViews(t, "the replica moved to kbroker 3", view(3, "[3]", "[3]"), addrs, topic)
	want = append(want, produceAcked(t, addrs, topic, "c", 50)...)
	checkValues(t, kb.Addr(), topic, false, want)
	reassign(2)
	waitViews(t, "the replica moved back to Kafka", view(2, "[2]", "[2]"), addrs, topic)
	want = append(want, produceAcked(t, addrs, topic, "d", 50)...)
	checkValues(t, kf.Addr(), topic, false, want)
	for _, bad := range []string{"is old. Latest known controller epoch", "from an old controller"} {
		if strings.Contains(kf.out.String(), bad) {
			t.Errorf("Kafka refused kbroker's controller as stale:\n%s", grepLines(kf.out.String(), bad))
		}
	}

	// kill -9 of the Kafka leader: kbroker's controller elects the kbroker
	// follower from the ISR, and it has every acknowledged record.
	reassign(2, 3)
	waitViews(t, "kbroker 3 back in Kafka's ISR", view(2, "[2 3]", "[2 3]"), addrs, topic)
	want = append(want, produceAcked(t, addrs, topic, "e", 50)...)
	if err := killProcGroup(kf.cmd); err != nil {
		t.Fatalf("kill -9 of Kafka: %v", err)
	}
	<-kf.done
	waitViews(t, "kbroker 3 leading after Kafka's kill",
		fmt.Sprintf("controller 1 brokers [1 3]; %s-0 leader 3 replicas [2 3] isr [3]", topic), []string{ctrl.Addr(), kb.Addr()}, topic)
	checkValues(t, kb.Addr(), topic, false, want)
}
