package controller

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeZK is an in-memory StateWriter: state znodes with versions and the
// controller epoch's version every write is checked against.
type fakeZK struct {
	epochVersion int32
	states       map[TopicPartition]zkdata.PartitionState
	// beforeUpdate runs before each UpdatePartitionStates (to simulate a
	// concurrent writer).
	beforeUpdate func()
	updates      int
	topics       map[string]zkdata.TopicAssignment
}

func newFakeZK() *fakeZK { return &fakeZK{states: map[TopicPartition]zkdata.PartitionState{}} }

func (f *fakeZK) CreatePartitionStates(ev int32, states map[TopicPartition]zkdata.PartitionState) (map[TopicPartition]error, error) {
	if ev != f.epochVersion {
		return nil, ErrControllerMoved
	}
	failed := map[TopicPartition]error{}
	for tp, st := range states {
		if _, ok := f.states[tp]; ok {
			failed[tp] = errors.New("node exists")
			continue
		}
		st.ZkVersion = 0
		f.states[tp] = st.Clone()
	}
	return failed, nil
}

func (f *fakeZK) UpdatePartitionStates(ev int32, states map[TopicPartition]zkdata.PartitionState) (map[TopicPartition]int32, map[TopicPartition]error, error) {
	f.updates++
	if f.beforeUpdate != nil {
		f.beforeUpdate()
		f.beforeUpdate = nil
	}
	if ev != f.epochVersion {
		return nil, nil, ErrControllerMoved
	}
	written, failed := map[TopicPartition]int32{}, map[TopicPartition]error{}
	for tp, st := range states {
		cur, ok := f.states[tp]
		if !ok || cur.ZkVersion != st.ZkVersion {
			failed[tp] = ErrStateVersionConflict
			continue
		}
		st.ZkVersion++
		f.states[tp] = st.Clone()
		written[tp] = st.ZkVersion
	}
	return written, failed, nil
}

func (f *fakeZK) WriteTopicAssignment(ev int32, topic string, a zkdata.TopicAssignment) error {
	if ev != f.epochVersion {
		return ErrControllerMoved
	}
	if f.topics == nil {
		f.topics = map[string]zkdata.TopicAssignment{}
	}
	f.topics[topic] = a
	return nil
}

func (f *fakeZK) ReadPartitionStates(tps []TopicPartition) (map[TopicPartition]zkdata.PartitionState, error) {
	out := map[TopicPartition]zkdata.PartitionState{}
	for _, tp := range tps {
		if st, ok := f.states[tp]; ok {
			out[tp] = st.Clone()
		}
	}
	return out, nil
}

func broker(id int32, epoch int64) LiveBroker {
	return LiveBroker{Epoch: epoch, Registration: zkdata.BrokerRegistration{ID: id, Endpoints: []zkdata.Endpoint{
		{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9090 + id, SecurityProtocol: "PLAINTEXT"}}}}
}

func tp(t string, p int32) TopicPartition { return TopicPartition{Topic: t, Partition: p} }

// cluster returns a machine at controller epoch 5 with live brokers 1..n.
func cluster(t *testing.T, n int32) (*Machine, *fakeZK) {
	t.Helper()
	zk := newFakeZK()
	c := NewContext(1, 5, 0)
	m := NewMachine(c, zk)
	live := map[int32]LiveBroker{}
	for id := int32(1); id <= n; id++ {
		live[id] = broker(id, 100+int64(id))
	}
	if _, err := m.OnBrokerChange(live); err != nil {
		t.Fatal(err)
	}
	return m, zk
}

func createTopic(t *testing.T, m *Machine, name string, parts map[int32][]int32) Output {
	t.Helper()
	out, err := m.OnTopicChange(name, zkdata.TopicAssignment{TopicID: [16]byte{1, 2}, Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// describe renders sends as "broker:Kind topic-p(leader/epoch/isr)..." so a
// test states the expected requests in one line each.
func describe(sends []Send) []string {
	var out []string
	for _, s := range sends {
		var parts []string
		switch r := s.Req.(type) {
		case *kmsg.LeaderAndISRRequest:
			for _, ts := range r.TopicStates {
				for _, p := range ts.PartitionStates {
					n := ""
					if p.IsNew {
						n = " new"
					}
					parts = append(parts, fmt.Sprintf("%s-%d(%d/%d/%v%s)", ts.Topic, p.Partition, p.Leader, p.LeaderEpoch, p.ISR, n))
				}
			}
			out = append(out, fmt.Sprintf("%d:LeaderAndIsr %s", s.Broker, strings.Join(parts, " ")))
		case *kmsg.UpdateMetadataRequest:
			for _, ts := range r.TopicStates {
				for _, p := range ts.PartitionStates {
					parts = append(parts, fmt.Sprintf("%s-%d(%d/%d/%v)", ts.Topic, p.Partition, p.Leader, p.LeaderEpoch, p.ISR))
				}
			}
			var live []string
			for _, b := range r.LiveBrokers {
				live = append(live, fmt.Sprint(b.ID))
			}
			out = append(out, fmt.Sprintf("%d:UpdateMetadata brokers=%s %s", s.Broker, strings.Join(live, ","), strings.Join(parts, " ")))
		case *kmsg.StopReplicaRequest:
			for _, ts := range r.Topics {
				for _, p := range ts.PartitionStates {
					parts = append(parts, fmt.Sprintf("%s-%d(delete=%v)", ts.Topic, p.Partition, p.Delete))
				}
			}
			out = append(out, fmt.Sprintf("%d:StopReplica %s", s.Broker, strings.Join(parts, " ")))
		}
	}
	return out
}

func expectSends(t *testing.T, got []Send, want ...string) {
	t.Helper()
	d := describe(got)
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("sends:\n  %s\nwant:\n  %s", strings.Join(d, "\n  "), strings.Join(want, "\n  "))
	}
}

func expectState(t *testing.T, zk *fakeZK, m *Machine, p TopicPartition, leader, epoch int32, isr ...int32) {
	t.Helper()
	st := zk.states[p]
	if st.Leader != leader || st.LeaderEpoch != epoch || !reflect.DeepEqual(st.ISR, isr) || st.ControllerEpoch != 5 {
		t.Fatalf("%s in ZooKeeper: %+v, want leader %d epoch %d isr %v", p, st, leader, epoch, isr)
	}
	if got := m.Ctx.States[p]; !reflect.DeepEqual(got, st) {
		t.Fatalf("%s context %+v differs from ZooKeeper %+v", p, got, st)
	}
}

func TestTopicCreation(t *testing.T) {
	m, zk := cluster(t, 3)
	out := createTopic(t, m, "t", map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}})
	expectState(t, zk, m, tp("t", 0), 1, 0, 1, 2, 3)
	expectState(t, zk, m, tp("t", 1), 2, 0, 2, 3, 1)
	expectSends(t, out.Sends,
		"1:LeaderAndIsr t-0(1/0/[1 2 3] new) t-1(2/0/[2 3 1] new)",
		"1:UpdateMetadata brokers=1,2,3 t-0(1/0/[1 2 3]) t-1(2/0/[2 3 1])",
		"2:LeaderAndIsr t-0(1/0/[1 2 3] new) t-1(2/0/[2 3 1] new)",
		"2:UpdateMetadata brokers=1,2,3 t-0(1/0/[1 2 3]) t-1(2/0/[2 3 1])",
		"3:LeaderAndIsr t-0(1/0/[1 2 3] new) t-1(2/0/[2 3 1] new)",
		"3:UpdateMetadata brokers=1,2,3 t-0(1/0/[1 2 3]) t-1(2/0/[2 3 1])",
	)
	if m.Ctx.Partitions[tp("t", 0)] != PartitionOnline || m.Ctx.Replicas[PartitionReplica{tp("t", 0), 3}] != ReplicaOnline {
		t.Fatal("partition or replica not online")
	}
	// The request carries the controller's id and epoch, the target's
	// broker epoch and the topic id, and lists the leaders' endpoints.
	req := out.Sends[0].Req.(*kmsg.LeaderAndISRRequest)
	if req.ControllerID != 1 || req.ControllerEpoch != 5 || req.BrokerEpoch != 101 || req.TopicStates[0].TopicID != [16]byte{1, 2} ||
		len(req.LiveLeaders) != 2 || req.LiveLeaders[1].Port != 9092 || req.Version != LeaderAndISRVersion {
		t.Fatalf("LeaderAndIsr header %+v", req)
	}
	// A new replica on a dead broker: the live ones form the ISR.
	m2, zk2 := cluster(t, 2)
	createTopic(t, m2, "u", map[int32][]int32{0: {3, 2, 1}})
	expectState(t, zk2, m2, tp("u", 0), 2, 0, 2, 1)
	// Adding a partition to a known topic initializes only the new one.
	out = createTopic(t, m, "t", map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}})
	expectState(t, zk, m, tp("t", 2), 3, 0, 3, 1, 2)
	expectState(t, zk, m, tp("t", 0), 1, 0, 1, 2, 3)
}

func TestBrokerFailureAndReturn(t *testing.T) {
	m, zk := cluster(t, 3)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2, 3}, 1: {2, 1, 3}, 2: {1}})
	out, err := m.OnBrokerChange(map[int32]LiveBroker{2: broker(2, 102), 3: broker(3, 103)})
	if err != nil {
		t.Fatal(err)
	}
	// t-0: leader 1 died → first live ISR member in replica order, epoch+1.
	expectState(t, zk, m, tp("t", 0), 2, 1, 2, 3)
	// t-1: follower 1 died → leaves the ISR, epoch+1, leader stays.
	expectState(t, zk, m, tp("t", 1), 2, 1, 2, 3)
	// t-2: the only replica died → no leader, ISR keeps the last member.
	expectState(t, zk, m, tp("t", 2), -1, 1, 1)
	if m.Ctx.Partitions[tp("t", 2)] != PartitionOffline {
		t.Fatalf("t-2 is %s", m.Ctx.Partitions[tp("t", 2)])
	}
	expectSends(t, out.Sends,
		"2:LeaderAndIsr t-0(2/1/[2 3]) t-1(2/1/[2 3])",
		"2:UpdateMetadata brokers=2,3 t-0(2/1/[2 3]) t-1(2/1/[2 3]) t-2(-1/1/[1])",
		"3:LeaderAndIsr t-0(2/1/[2 3]) t-1(2/1/[2 3])",
		"3:UpdateMetadata brokers=2,3 t-0(2/1/[2 3]) t-1(2/1/[2 3]) t-2(-1/1/[1])",
	)
	um := out.Sends[1].Req.(*kmsg.UpdateMetadataRequest)
	if off := um.TopicStates[0].PartitionStates[0].OfflineReplicas; !reflect.DeepEqual(off, []int32{1}) {
		t.Fatalf("offline replicas %v", off)
	}

	// Broker 1 returns with a new epoch: it gets every partition, and t-2
	// (its last ISR member is back) is elected again.
	out, err = m.OnBrokerChange(map[int32]LiveBroker{1: broker(1, 201), 2: broker(2, 102), 3: broker(3, 103)})
	if err != nil {
		t.Fatal(err)
	}
	expectState(t, zk, m, tp("t", 2), 1, 2, 1)
	expectState(t, zk, m, tp("t", 0), 2, 1, 2, 3) // not moved back: that is a preferred election
	// Like Kafka's onBrokerStartup: first the others learn of broker 1,
	// then broker 1 gets the live brokers and every partition (so its
	// metadata knows the leaders it is told to follow), then its
	// LeaderAndIsr.
	d := describe(out.Sends)
	if len(d) < 4 || !strings.HasPrefix(d[0], "2:UpdateMetadata brokers=1,2,3") || !strings.HasPrefix(d[1], "3:UpdateMetadata brokers=1,2,3") ||
		!strings.HasPrefix(d[2], "1:UpdateMetadata brokers=1,2,3 t-0(2/1/[2 3]) t-1(2/1/[2 3]) t-2(-1/1/[1])") ||
		!strings.HasPrefix(d[3], "1:LeaderAndIsr t-0(2/1/[2 3]) t-1(2/1/[2 3]) t-2(1/2/[1])") {
		t.Fatalf("sends %v", d)
	}
	if out.Sends[3].Req.(*kmsg.LeaderAndISRRequest).BrokerEpoch != 201 {
		t.Fatal("request for the returned broker does not carry its new epoch")
	}
}

func TestUncleanElection(t *testing.T) {
	m, zk := cluster(t, 2)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2}})
	// 2 drops out of the ISR (a leader's own ISR write), then 1 dies.
	st := zk.states[tp("t", 0)]
	st.ISR = []int32{1}
	st.ZkVersion++
	zk.states[tp("t", 0)] = st
	if _, err := m.OnISRChange([]TopicPartition{tp("t", 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{2: broker(2, 102)}); err != nil {
		t.Fatal(err)
	}
	expectState(t, zk, m, tp("t", 0), -1, 1, 1) // clean: stays offline
	m.Ctx.Unclean = func(string) bool { return true }
	failed, _, err := m.OnElectLeaders([]TopicPartition{tp("t", 0)}, ElectPreferred)
	if err != nil || !errors.Is(failed[tp("t", 0)], kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred election without live preferred replica: %v %v", failed, err)
	}
	failed, _, err = m.OnElectLeaders([]TopicPartition{tp("t", 0)}, ElectOffline)
	if err != nil || len(failed) != 0 {
		t.Fatal(failed, err)
	}
	expectState(t, zk, m, tp("t", 0), 2, 2, 2)
	if zk.states[tp("t", 0)].LeaderRecoveryState != zkdata.LeaderRecovering {
		t.Fatal("unclean leader not RECOVERING")
	}
	// With a live leader there is nothing to elect.
	failed, _, _ = m.OnElectLeaders([]TopicPartition{tp("t", 0)}, ElectOffline)
	if !errors.Is(failed[tp("t", 0)], kerr.ElectionNotNeeded) {
		t.Fatalf("unclean election on a led partition: %v", failed)
	}
}

// A leader shrank the ISR between the controller's read and its write: the
// write fails its version check, the controller re-reads and elects from
// the fresh ISR.
func TestVersionConflictRetries(t *testing.T) {
	m, zk := cluster(t, 3)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2, 3}})
	zk.beforeUpdate = func() {
		st := zk.states[tp("t", 0)]
		st.ISR = []int32{1, 3}
		st.ZkVersion++
		zk.states[tp("t", 0)] = st
	}
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{2: broker(2, 102), 3: broker(3, 103)}); err != nil {
		t.Fatal(err)
	}
	expectState(t, zk, m, tp("t", 0), 3, 1, 3)
	if zk.updates < 2 {
		t.Fatalf("%d update rounds", zk.updates)
	}
}

func TestControllerMoved(t *testing.T) {
	m, zk := cluster(t, 2)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2}})
	zk.epochVersion = 7 // another controller bumped /controller_epoch
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{2: broker(2, 102)}); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("err %v", err)
	}
	// A state written by a newer controller also deposes this one.
	m, zk = cluster(t, 2)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2}})
	st := m.Ctx.States[tp("t", 0)]
	st.ControllerEpoch = 6
	m.Ctx.States[tp("t", 0)] = st
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{2: broker(2, 102)}); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("err %v", err)
	}
	_ = zk
}

func TestControlledShutdown(t *testing.T) {
	m, zk := cluster(t, 3)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2, 3}, 1: {2, 1, 3}, 2: {1}})
	if _, _, err := m.OnControlledShutdown(1, 50); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	if _, _, err := m.OnControlledShutdown(9, 1); !errors.Is(err, kerr.BrokerNotAvailable) {
		t.Fatalf("unknown broker: %v", err)
	}
	remaining, out, err := m.OnControlledShutdown(1, 101)
	if err != nil || len(remaining) != 0 {
		t.Fatal(remaining, err)
	}
	expectState(t, zk, m, tp("t", 0), 2, 1, 2, 3) // led: moved, 1 leaves the ISR
	expectState(t, zk, m, tp("t", 1), 2, 1, 2, 3) // followed: 1 leaves the ISR
	expectState(t, zk, m, tp("t", 2), 1, 0, 1)    // RF 1: untouched
	expectSends(t, out.Sends,
		"1:LeaderAndIsr t-0(2/1/[2 3])",
		"1:UpdateMetadata brokers=1,2,3 t-0(2/1/[2 3]) t-1(2/1/[2 3])",
		"1:StopReplica t-1(delete=false)",
		"2:LeaderAndIsr t-0(2/1/[2 3]) t-1(2/1/[2 3])",
		"2:UpdateMetadata brokers=1,2,3 t-0(2/1/[2 3]) t-1(2/1/[2 3])",
		"3:LeaderAndIsr t-0(2/1/[2 3]) t-1(2/1/[2 3])",
		"3:UpdateMetadata brokers=1,2,3 t-0(2/1/[2 3]) t-1(2/1/[2 3])",
	)
	// When it then stops, its replicas are offline: the partitions it is
	// no longer in the ISR of keep their state, but every live broker
	// learns of the offline replica (UpdateMetadata), as in Kafka.
	out, err = m.OnBrokerChange(map[int32]LiveBroker{2: broker(2, 102), 3: broker(3, 103)})
	if err != nil {
		t.Fatal(err)
	}
	expectSends(t, out.Sends,
		"2:UpdateMetadata brokers=2,3 t-0(2/1/[2 3]) t-1(2/1/[2 3]) t-2(-1/1/[1])",
		"3:UpdateMetadata brokers=2,3 t-0(2/1/[2 3]) t-1(2/1/[2 3]) t-2(-1/1/[1])",
	)
	for _, s := range out.Sends {
		for _, ts := range s.Req.(*kmsg.UpdateMetadataRequest).TopicStates {
			for _, p := range ts.PartitionStates {
				if !reflect.DeepEqual(p.OfflineReplicas, []int32{1}) {
					t.Errorf("t-%d offline replicas %v, want [1]", p.Partition, p.OfflineReplicas)
				}
			}
		}
	}
	// A partition only the shutting-down broker has in sync stays with it.
	m, _ = cluster(t, 2)
	createTopic(t, m, "u", map[int32][]int32{0: {1, 2}})
	st := m.Ctx.States[tp("u", 0)]
	st.ISR = []int32{1}
	m.Ctx.States[tp("u", 0)] = st
	m.W.(*fakeZK).states[tp("u", 0)] = st
	remaining, _, err = m.OnControlledShutdown(1, -1)
	if err != nil || !reflect.DeepEqual(remaining, []TopicPartition{tp("u", 0)}) {
		t.Fatal(remaining, err)
	}
}

func TestTopicDeletion(t *testing.T) {
	m, _ := cluster(t, 3)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2}, 1: {3}})
	out := m.OnTopicDeletion([]string{"t", "ghost"})
	if !reflect.DeepEqual(out.DeletedTopics, []string{"ghost", "t"}) {
		t.Fatalf("deleted %v", out.DeletedTopics)
	}
	expectSends(t, out.Sends,
		"1:UpdateMetadata brokers=1,2,3 t-0(-2/0/[1 2]) t-1(-2/0/[3])",
		"1:StopReplica t-0(delete=true)",
		"2:UpdateMetadata brokers=1,2,3 t-0(-2/0/[1 2]) t-1(-2/0/[3])",
		"2:StopReplica t-0(delete=true)",
		"3:UpdateMetadata brokers=1,2,3 t-0(-2/0/[1 2]) t-1(-2/0/[3])",
		"3:StopReplica t-1(delete=true)",
	)
	if _, ok := m.Ctx.Topics["t"]; ok || len(m.Ctx.States) != 0 {
		t.Fatal("topic still in the context")
	}

	// With a replica on a dead broker the deletion waits for it.
	m, _ = cluster(t, 2)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2}})
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{1: broker(1, 101)}); err != nil {
		t.Fatal(err)
	}
	if out := m.OnTopicDeletion([]string{"t"}); len(out.DeletedTopics) != 0 {
		t.Fatalf("deleted with a dead replica: %v", out.DeletedTopics)
	}
	out, err := m.OnBrokerChange(map[int32]LiveBroker{1: broker(1, 101), 2: broker(2, 202)})
	if err != nil || !reflect.DeepEqual(out.DeletedTopics, []string{"t"}) {
		t.Fatalf("after the broker returned: %v %v", out.DeletedTopics, err)
	}
}

func TestISRChangeAndPreferredElection(t *testing.T) {
	m, zk := cluster(t, 3)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2, 3}})
	// Broker 1 fails and returns: leadership stays on 2 until a preferred election.
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{2: broker(2, 102), 3: broker(3, 103)}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{1: broker(1, 301), 2: broker(2, 102), 3: broker(3, 103)}); err != nil {
		t.Fatal(err)
	}
	failed, _, err := m.OnElectLeaders([]TopicPartition{tp("t", 0)}, ElectPreferred)
	if err != nil || !errors.Is(failed[tp("t", 0)], kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred leader out of the ISR: %v %v", failed, err)
	}
	// Leader 2 expands the ISR with 1 and notifies.
	st := zk.states[tp("t", 0)]
	st.ISR = []int32{2, 3, 1}
	st.ZkVersion++
	zk.states[tp("t", 0)] = st
	out, err := m.OnISRChange([]TopicPartition{tp("t", 0), tp("gone", 0)})
	if err != nil {
		t.Fatal(err)
	}
	if d := describe(out.Sends); len(d) != 3 || !strings.Contains(d[0], "t-0(2/1/[2 3 1])") {
		t.Fatalf("sends %v", d)
	}
	failed, out, err = m.OnElectLeaders([]TopicPartition{tp("t", 0)}, ElectPreferred)
	if err != nil || len(failed) != 0 {
		t.Fatal(failed, err)
	}
	expectState(t, zk, m, tp("t", 0), 1, 2, 2, 3, 1)
	failed, _, _ = m.OnElectLeaders([]TopicPartition{tp("t", 0), tp("x", 0)}, ElectPreferred)
	if !errors.Is(failed[tp("t", 0)], kerr.ElectionNotNeeded) || !errors.Is(failed[tp("x", 0)], kerr.UnknownTopicOrPartition) {
		t.Fatalf("failed %v", failed)
	}
}

// A new controller's Startup sends every live broker the full state and
// elects leaders for partitions left offline or never initialized.
func TestStartup(t *testing.T) {
	zk := newFakeZK()
	c := NewContext(2, 5, 0)
	c.Live[1], c.Live[2] = broker(1, 101), broker(2, 102)
	c.AddTopic("t", zkdata.TopicAssignment{Partitions: map[int32][]int32{0: {3, 1}, 1: {1, 2}, 2: {2}}})
	zk.states[tp("t", 0)] = zkdata.PartitionState{Leader: 3, LeaderEpoch: 4, ISR: []int32{3, 1}, ControllerEpoch: 4, ZkVersion: 6}
	zk.states[tp("t", 1)] = zkdata.PartitionState{Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2}, ControllerEpoch: 4}
	for k, v := range zk.states {
		c.States[k] = v.Clone()
	}
	m := NewMachine(c, zk)
	out, err := m.Startup()
	if err != nil {
		t.Fatal(err)
	}
	// Leader 3 is not registered: it leaves the ISR (no leader, epoch 5),
	// then the offline election picks 1 (epoch 6), as Kafka's failover.
	expectState(t, zk, m, tp("t", 0), 1, 6, 1)
	expectState(t, zk, m, tp("t", 2), 2, 0, 2) // had no state znode
	var brokers []int32
	for _, s := range out.Sends {
		brokers = append(brokers, s.Broker)
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	if len(out.Sends) != 6 || brokers[0] != 1 || brokers[5] != 2 {
		t.Fatalf("sends %v", describe(out.Sends))
	}
	// The live brokers go first, as in Kafka's onControllerFailover.
	if d := describe(out.Sends); !strings.HasPrefix(d[0], "1:UpdateMetadata brokers=1,2") || !strings.HasPrefix(d[1], "2:UpdateMetadata brokers=1,2") {
		t.Fatalf("sends %v", d)
	}
}

func TestLogDirFailure(t *testing.T) {
	m, zk := cluster(t, 3)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2, 3}, 1: {2, 1, 3}, 2: {1, 2, 3}, 3: {1}})
	// Broker 1 reports a failed directory: it is asked about each of its
	// partitions with their current state (the batch adds UpdateMetadata,
	// as Kafka's); broker 4 is not live.
	out := m.OnLogDirFailure([]int32{1, 4, 1})
	expectSends(t, out.Sends, "1:LeaderAndIsr t-0(1/0/[1 2 3]) t-1(2/0/[2 1 3]) t-2(1/0/[1 2 3]) t-3(1/0/[1])",
		"1:UpdateMetadata brokers=1,2,3 t-0(1/0/[1 2 3]) t-1(2/0/[2 1 3]) t-2(1/0/[1 2 3]) t-3(1/0/[1])",
		"2:UpdateMetadata brokers=1,2,3 t-0(1/0/[1 2 3]) t-1(2/0/[2 1 3]) t-2(1/0/[1 2 3]) t-3(1/0/[1])",
		"3:UpdateMetadata brokers=1,2,3 t-0(1/0/[1 2 3]) t-1(2/0/[2 1 3]) t-2(1/0/[1 2 3]) t-3(1/0/[1])")

	// An answer from an earlier incarnation of broker 1 changes nothing.
	if out, err := m.OnLeaderAndISRResponse(1, 99, []TopicPartition{tp("t", 0)}, nil); err != nil || len(out.Sends) != 0 || len(m.Ctx.OfflineDirs) != 0 {
		t.Fatalf("stale answer: %v %v %v", describe(out.Sends), err, m.Ctx.OfflineDirs)
	}
	// t-0 (led), t-1 (followed) and t-3 (only replica) are in the failed
	// directory; t-2 is healthy.
	out, err := m.OnLeaderAndISRResponse(1, 101, []TopicPartition{tp("t", 0), tp("t", 1), tp("t", 3)}, []TopicPartition{tp("t", 2)})
	if err != nil {
		t.Fatal(err)
	}
	expectState(t, zk, m, tp("t", 0), 2, 1, 2, 3) // elected away, the ISR of online replicas
	expectState(t, zk, m, tp("t", 1), 2, 1, 2, 3)
	expectState(t, zk, m, tp("t", 2), 1, 0, 1, 2, 3)
	expectState(t, zk, m, tp("t", 3), -1, 1, 1) // no other replica: offline, ISR keeps its last member
	d := strings.Join(describe(out.Sends), "\n")
	if !strings.Contains(d, "1:StopReplica t-0(delete=false) t-1(delete=false) t-3(delete=false)") {
		t.Fatalf("no StopReplica to broker 1:\n%s", d)
	}
	var um *kmsg.UpdateMetadataRequest
	for _, s := range out.Sends {
		if r, ok := s.Req.(*kmsg.UpdateMetadataRequest); ok && s.Broker == 2 {
			um = r
		}
	}
	offline := map[int32][]int32{}
	for _, p := range um.TopicStates[0].PartitionStates {
		offline[p.Partition] = p.OfflineReplicas
	}
	if !reflect.DeepEqual(offline[0], []int32{1}) || !reflect.DeepEqual(offline[3], []int32{1}) {
		t.Fatalf("offline replicas in UpdateMetadata %v", offline)
	}
	// A later election does not pick the offline replica either, even
	// unclean: t-3 stays offline.
	if _, out, err := m.OnElectLeaders([]TopicPartition{tp("t", 3)}, ElectOffline); err != nil {
		t.Fatal(err)
	} else if len(out.Sends) != 0 {
		t.Fatalf("t-3 elected: %v", describe(out.Sends))
	}
	expectState(t, zk, m, tp("t", 3), -1, 1, 1)
	// The same answer again changes nothing.
	if out, err := m.OnLeaderAndISRResponse(1, 101, []TopicPartition{tp("t", 0)}, nil); err != nil || len(out.Sends) != 0 {
		t.Fatalf("repeated answer: %v %v", describe(out.Sends), err)
	}

	// Broker 1 restarts (new epoch): its directories are healthy, it is
	// forgotten offline and t-3 gets its leader back.
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{1: broker(1, 201), 2: broker(2, 102), 3: broker(3, 103)}); err != nil {
		t.Fatal(err)
	}
	if len(m.Ctx.OfflineDirs) != 0 {
		t.Fatalf("offline dirs after restart %v", m.Ctx.OfflineDirs)
	}
	expectState(t, zk, m, tp("t", 3), 1, 3, 1) // the bounce wrote epoch 2, the election 3
}

// New topics of one watch event are one decision: one LeaderAndIsr and one
// UpdateMetadata per broker for all their partitions.
func TestNewTopicsInOneDecision(t *testing.T) {
	m, zk := cluster(t, 2)
	out, err := m.OnTopicChanges([]string{"a", "b"}, []zkdata.TopicAssignment{
		{TopicID: [16]byte{1}, Partitions: map[int32][]int32{0: {1, 2}}},
		{TopicID: [16]byte{2}, Partitions: map[int32][]int32{0: {2, 1}, 1: {1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	expectSends(t, out.Sends,
		"1:LeaderAndIsr a-0(1/0/[1 2] new) b-0(2/0/[2 1] new) b-1(1/0/[1] new)",
		"1:UpdateMetadata brokers=1,2 a-0(1/0/[1 2]) b-0(2/0/[2 1]) b-1(1/0/[1])",
		"2:LeaderAndIsr a-0(1/0/[1 2] new) b-0(2/0/[2 1] new)",
		"2:UpdateMetadata brokers=1,2 a-0(1/0/[1 2]) b-0(2/0/[2 1]) b-1(1/0/[1])")
	expectState(t, zk, m, tp("b", 1), 1, 0, 1)
}
