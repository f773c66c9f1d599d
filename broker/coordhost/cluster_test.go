package coordhost

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterHost is a Host over a replica.Manager in cluster mode: broker 1
// of a cluster whose broker 2 never answers. The test moves the
// leadership of the internal topics' two partitions (and of the data topic
// "t") with MakeLeader and MakeFollower, as the controller's LeaderAndIsr
// does, and the host follows through OnLeadershipChange.
type clusterHost struct {
	t     *testing.T
	h     *Host
	rm    *replica.Manager
	f     *faultyReplicas
	ids   map[string][16]byte
	epoch map[string]int32
	close func()
}

type noISRWrites struct{}

func (noISRWrites) ChangeISR(topic string, partition int32, cur replica.PartitionState, isr []int32) (replica.PartitionState, error) {
	return cur, fmt.Errorf("no ISR writes in this test: %w", replica.ErrStaleISRVersion)
}

func newClusterHost(t *testing.T) *clusterHost {
	t.Helper()
	return newClusterHostWith(t, map[string]string{
		"offsets.topic.num.partitions":         "2",
		"transaction.state.log.num.partitions": "2",
		"group.initial.rebalance.delay.ms":     "0",
	}, []controller.Topic{
		{Name: offsetsTopic, Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: txnStateTopic, Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "t", Partitions: 1, ReplicationFactor: 2},
	})
}

// newClusterHostWith is a cluster-mode Host (broker 1, no ZooKeeper: the
// metadata in a file store) over a real replica.Manager with topics, its
// partitions without a role until the test makes them leaders.
func newClusterHostWith(t *testing.T, props map[string]string, topics []controller.Topic) *clusterHost {
	t.Helper()
	c := openClusterHost(t, t.TempDir(), props, topics)
	t.Cleanup(c.close)
	return c
}

// openClusterHost opens the cluster-mode Host of newClusterHostWith on
// dir, creating topics in its metadata store (none: the store is reopened
// as it is). It starts as the broker does (broker.New): the host loads
// before the manager enters cluster mode, while the partitions still look
// led by this node. close stops it; it may be called once.
func openClusterHost(t *testing.T, dir string, props map[string]string, topics []controller.Topic) *clusterHost {
	t.Helper()
	all := map[string]string{
		"log.dirs":          filepath.Join(dir, "data"),
		"broker.id":         "1",
		"zookeeper.connect": "127.0.0.1:1/unused",
	}
	for k, v := range props {
		all[k] = v
	}
	cfg := testConfig(t, all)
	closing := make(chan struct{})
	rm := replica.NewManager(cfg, closing)
	if err := rm.OpenDirs(nil); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "meta"), 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := controller.OpenFileStore(filepath.Join(dir, "meta"), "cluster", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &clusterHost{t: t, rm: rm, ids: map[string][16]byte{}, epoch: map[string]int32{}}
	for _, top := range topics {
		top.ID = controller.NewTopicID()
		if err := store.CreateTopic(top); err != nil {
			t.Fatal(err)
		}
	}
	for _, top := range store.Topics() {
		c.ids[top.Name] = top.ID
	}
	if err := rm.Load(store); err != nil {
		t.Fatal(err)
	}
	c.f = &faultyReplicas{Manager: rm}
	c.h = NewHost(cfg, c.f, closing)
	if err := c.h.Load(store); err != nil {
		t.Fatal(err)
	}
	rm.SetReplicationConfig(replica.ReplicationConfig{LagTimeMax: time.Hour, FetchWaitMax: 10 * time.Millisecond, FetchBackoff: 50 * time.Millisecond})
	rm.SetCluster(1, noISRWrites{}, func(int32) (string, bool) { return "", false })
	rm.OnLeadershipChange(c.h.OnLeadershipChange)
	c.close = func() {
		close(closing)
		c.h.CloseShares()
		c.h.Close()
		rm.Stop()
		if err := rm.CloseStorage(); err != nil {
			t.Error(err)
		}
		store.Close()
	}
	return c
}

// move makes broker 1 the leader (lead) or a follower of broker 2 of
// topic-partition, with a new leader epoch.
func (c *clusterHost) move(topic string, partition int32, lead bool) {
	c.t.Helper()
	key := fmt.Sprintf("%s-%d", topic, partition)
	c.epoch[key]++
	e := c.epoch[key]
	st := replica.PartitionState{LeaderEpoch: e, ControllerEpoch: 1, Replicas: []int32{1, 2}, ZKVersion: e}
	var err error
	if lead {
		st.Leader, st.ISR = 1, []int32{1}
		err = c.rm.MakeLeader(topic, partition, c.ids[topic], st)
	} else {
		st.Leader, st.ISR = 2, []int32{2}
		err = c.rm.MakeFollower(topic, partition, c.ids[topic], st)
	}
	if err != nil {
		c.t.Fatalf("moving %s (lead %v): %v", key, lead, err)
	}
}

// idIn returns an id with prefix that maps to partition part of 2.
func idIn(prefix string, part int32) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("%s%d", prefix, i); group.PartitionFor(id, 2) == part {
			return id
		}
	}
}

// stableGroup makes member a the leader of a stable generation of groupID
// and returns a's member id and the generation.
func stableGroup(t *testing.T, h *Host, groupID string) (string, int32) {
	t.Helper()
	a := joinWithID(t, h, groupID)
	ja := await(t, groupRequest(t, h, joinReq(groupID, a)), "join a").(*kmsg.JoinGroupResponse)
	if ja.ErrorCode != 0 || ja.LeaderID != a {
		t.Fatalf("join a of %s: %v leader %s", groupID, kerr.ErrorForCode(ja.ErrorCode), ja.LeaderID)
	}
	sync := syncReq(groupID, a, ja.Generation)
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a, MemberAssignment: []byte{0}}}
	if sa := await(t, groupRequest(t, h, sync), "sync a").(*kmsg.SyncGroupResponse); sa.ErrorCode != 0 {
		t.Fatalf("sync a of %s: %v", groupID, kerr.ErrorForCode(sa.ErrorCode))
	}
	return a, ja.Generation
}

// groupMembers describes groupID at the coordinator: its state and members.
func groupMembers(t *testing.T, h *Host, groupID string) (string, int) {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{groupID}
	r := await(t, groupRequest(t, h, req), "describe").(*kmsg.DescribeGroupsResponse)
	if len(r.Groups) != 1 {
		t.Fatalf("describe %s: %+v", groupID, r)
	}
	return r.Groups[0].State, len(r.Groups[0].Members)
}

// TestGroupPartitionsFollowLeadership: in a cluster the group coordinator
// holds only the __consumer_offsets partitions this broker leads. Losing
// one unloads its groups alone: the JoinGroup parked in it is answered
// NOT_COORDINATOR while a rebalance parked in the other partition goes on
// and completes. A reload (after a failed write) replays only the led
// partition, so no group owned elsewhere comes back with timers that would
// write where this broker cannot. Regaining the partition replays it.
func TestGroupPartitionsFollowLeadership(t *testing.T) {
	c := newClusterHost(t)
	h := c.h
	c.move(offsetsTopic, 0, true)
	c.move(offsetsTopic, 1, true)
	gA, gB := idIn("ga", 0), idIn("gb", 1)
	a, _ := stableGroup(t, h, gA)
	aB, _ := stableGroup(t, h, gB)
	// b joins each group: its JoinGroup waits for a to rejoin.
	parkedA := groupRequest(t, h, joinReq(gA, joinWithID(t, h, gA)))
	b := joinWithID(t, h, gB)
	parkedB := groupRequest(t, h, joinReq(gB, b))

	c.move(offsetsTopic, 0, false)
	if r := await(t, parkedA, "join parked in the lost partition").(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join parked in the lost partition answered %v, want NOT_COORDINATOR", kerr.ErrorForCode(r.ErrorCode))
	}
	select {
	case r := <-parkedB:
		t.Fatalf("join parked in the kept partition answered: %+v", r)
	default:
	}
	if state, _ := groupMembers(t, h, gA); state != "Dead" {
		t.Fatalf("group %s of the lost partition is %s, want unloaded (Dead)", gA, state)
	}
	// The rebalance in the kept partition completes: a rejoins.
	ja := await(t, groupRequest(t, h, joinReq(gB, aB)), "rejoin a").(*kmsg.JoinGroupResponse)
	jb := await(t, parkedB, "parked join of b").(*kmsg.JoinGroupResponse)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || jb.Generation != ja.Generation {
		t.Fatalf("rebalance of %s: a %v, b %v", gB, kerr.ErrorForCode(ja.ErrorCode), kerr.ErrorForCode(jb.ErrorCode))
	}
	sync := syncReq(gB, aB, ja.Generation)
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: aB, MemberAssignment: []byte{0}}, {MemberID: b, MemberAssignment: []byte{1}}}
	if r := await(t, groupRequest(t, h, sync), "sync of the leader").(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("sync of %s: %v", gB, kerr.ErrorForCode(r.ErrorCode))
	}

	// A reload replays the led partition only.
	h.groups.mu.Lock()
	h.groups.dropLocked()
	h.groups.mu.Unlock()
	if err := h.EnsureGroups(); err != nil {
		t.Fatal(err)
	}
	if state, _ := groupMembers(t, h, gA); state != "Dead" {
		t.Fatalf("after a reload the follower partition's group %s is %s, want not loaded (Dead)", gA, state)
	}
	if _, n := groupMembers(t, h, gB); n != 2 {
		t.Fatalf("after a reload %s has %d members, want 2", gB, n)
	}

	// Regained: the partition is replayed, a is back in its generation.
	c.move(offsetsTopic, 0, true)
	if state, n := groupMembers(t, h, gA); state != "Stable" || n != 1 {
		t.Fatalf("regained group %s: %s with %d members, want Stable with 1", gA, state, n)
	}
	if r := await(t, groupRequest(t, h, heartbeatReq(gA, a, 1)), "heartbeat").(*kmsg.HeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("heartbeat of a after the reload: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestRestartedBrokerLoadsGroupsWhenItLeads: a cluster broker that starts
// on a log dir holding __consumer_offsets loads no group until
// LeaderAndIsr makes it a leader. Its partitions look led by this node
// until it joins the cluster; loading them then kept the groups as the
// local copy held them, and the later gain (the partition "already
// loaded") served that stale copy: consumers restarted below offsets the
// new leader's log held (TestFaultsConsumerGroup, after a kill -9).
func TestRestartedBrokerLoadsGroupsWhenItLeads(t *testing.T) {
	props := map[string]string{"offsets.topic.num.partitions": "2", "transaction.state.log.num.partitions": "2"}
	dir := t.TempDir()
	c := openClusterHost(t, dir, props, []controller.Topic{
		{Name: offsetsTopic, Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "t", Partitions: 1, ReplicationFactor: 2},
	})
	c.move(offsetsTopic, 0, true)
	g := idIn("g", 0)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = 8
	commit.Group, commit.Generation = g, -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	if r := await(t, groupRequest(t, c.h, commit), "commit").(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	c.close()

	c = openClusterHost(t, dir, props, nil)
	t.Cleanup(c.close)
	if state, _ := groupMembers(t, c.h, g); state != "Dead" {
		t.Fatalf("before leading, the restarted broker holds group %s (%s), want not loaded (Dead)", g, state)
	}
	c.epoch[offsetsTopic+"-0"] = 1 // the epoch the first run led with
	c.move(offsetsTopic, 0, true)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 7
	fetch.Group = g
	r := await(t, groupRequest(t, c.h, fetch), "fetch").(*kmsg.OffsetFetchResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("committed offsets after the gain: %+v, want t-0 at 5", r.Topics)
	}
}

func heartbeatReq(groupID, member string, gen int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = groupID, member, gen
	return req
}

// initTxn starts transactional id id's producer and adds t-0 to its
// transaction; it returns the producer id and epoch.
func initTxn(t *testing.T, h *Host, id string) (int64, int16) {
	t.Helper()
	ireq := kmsg.NewPtrInitProducerIDRequest()
	ireq.Version = 3
	ireq.TransactionalID, ireq.TransactionTimeoutMillis = &id, 60000
	ir := txnRequest(t, h, ireq).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerID %s: %v", id, kerr.ErrorForCode(ir.ErrorCode))
	}
	areq := kmsg.NewPtrAddPartitionsToTxnRequest()
	areq.Version = 3
	areq.TransactionalID, areq.ProducerID, areq.ProducerEpoch = id, ir.ProducerID, ir.ProducerEpoch
	areq.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	ar := txnRequest(t, h, areq).(*kmsg.AddPartitionsToTxnResponse)
	if ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn %s: %v", id, kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	return ir.ProducerID, ir.ProducerEpoch
}

// txnState is DescribeTransactions of id at the coordinator: its state,
// or its error.
func txnState(t *testing.T, h *Host, id string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	r := txnRequest(t, h, req).(*kmsg.DescribeTransactionsResponse)
	if len(r.TransactionStates) != 1 {
		t.Fatalf("describe %s: %+v", id, r)
	}
	if code := r.TransactionStates[0].ErrorCode; code != 0 {
		return kerr.ErrorForCode(code).Error()
	}
	return r.TransactionStates[0].State
}

// TestTxnPartitionsFollowLeadership: the transaction coordinator loads and
// unloads single __transaction_state partitions as their leadership moves;
// the other partition's transactions stay as they are. A transaction left
// prepared (its marker could not be written) is forgotten with its
// partition, and finished by the coordinator when it gains the partition
// back: its markers are sent again on load.
func TestTxnPartitionsFollowLeadership(t *testing.T) {
	c := newClusterHost(t)
	h := c.h
	c.move("t", 0, true)
	c.move(txnStateTopic, 0, true)
	c.move(txnStateTopic, 1, true)
	tA, tB := idIn("ta", 0), idIn("tb", 1)
	pidA, epochA := initTxn(t, h, tA)
	initTxn(t, h, tB)

	// tA's commit marker cannot be written: tA stays PrepareCommit.
	c.f.setFault(func(topic string) error {
		if topic == "t" {
			return errInjected
		}
		return nil
	})
	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 3
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = tA, pidA, epochA, true
	if r := txnRequest(t, h, end).(*kmsg.EndTxnResponse); r.ErrorCode != 0 {
		t.Fatalf("EndTxn %s: %v", tA, kerr.ErrorForCode(r.ErrorCode))
	}
	if s := txnState(t, h, tA); s != "PrepareCommit" {
		t.Fatalf("%s is %s with its marker failing, want PrepareCommit", tA, s)
	}

	c.move(txnStateTopic, 0, false)
	if s := txnState(t, h, tA); s != kerr.TransactionalIDNotFound.Error() {
		t.Fatalf("%s of the lost partition: %s, want it unloaded", tA, s)
	}
	if s := txnState(t, h, tB); s != "Ongoing" {
		t.Fatalf("%s of the kept partition is %s, want Ongoing", tB, s)
	}
	h.txns.mu.Lock()
	unwritten := len(h.txns.mu.unwritten)
	h.txns.mu.Unlock()
	if unwritten != 0 {
		t.Fatalf("%d markers of the lost partition kept for a retry", unwritten)
	}

	// Regained with the marker writable: tA is replayed as PrepareCommit,
	// its marker is written and the transaction completes.
	c.f.setFault(nil)
	c.move(txnStateTopic, 0, true)
	if s := txnState(t, h, tA); s != "CompleteCommit" {
		t.Fatalf("%s after the partition was regained is %s, want CompleteCommit", tA, s)
	}
	if s := txnState(t, h, tB); s != "Ongoing" {
		t.Fatalf("%s is %s after the other partition was regained, want Ongoing", tB, s)
	}
	if hw := c.rm.PartitionOf("t", 0).HighWatermark(); hw != 1 {
		t.Fatalf("t-0 HW %d, want 1: the commit marker of %s alone", hw, tA)
	}
}
