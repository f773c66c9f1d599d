package coordhost

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// faultyReplicas is a real replica.Manager whose internal-topic appends can
// be made to fail: fail, if set, is asked before every append (AppendInternal
// and AppendMarker) with the partition's topic; a non-nil error is
// acknowledged instead of writing.
type faultyReplicas struct {
	*replica.Manager
	mu   sync.Mutex
	fail func(topic string) error
	// held, if set, holds the acknowledgements of AppendInternal (the
	// append itself happens) until it is closed.
	held chan struct{}
}

// holdAppends holds the acknowledgements of the internal appends from now
// until the returned func is called.
func (f *faultyReplicas) holdAppends() (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.held = ch
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.held = nil
		f.mu.Unlock()
		close(ch)
	}
}

func (f *faultyReplicas) setFault(fail func(topic string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

func (f *faultyReplicas) check(topic string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		return nil
	}
	return f.fail(topic)
}

func (f *faultyReplicas) AppendInternal(p *replica.Partition, batch []byte, done func(error)) {
	if err := f.check(p.Topic.Meta.Name); err != nil {
		done(err)
		return
	}
	f.mu.Lock()
	held := f.held
	f.mu.Unlock()
	if held != nil {
		f.Manager.AppendInternal(p, batch, func(err error) {
			go func() {
				<-held
				done(err)
			}()
		})
		return
	}
	f.Manager.AppendInternal(p, batch, done)
}

func (f *faultyReplicas) AppendMarker(p *replica.Partition, producerID int64, epoch int16, ct records.ControlType, coordinatorEpoch int32, nowMs int64, done func(error)) {
	if err := f.check(p.Topic.Meta.Name); err != nil {
		done(err)
		return
	}
	f.Manager.AppendMarker(p, producerID, epoch, ct, coordinatorEpoch, nowMs, done)
}

// failPlan fails the appends to topic whose 1-based number (counted from
// the call of failPlan) is in fails; other topics and numbers pass.
func failPlan(topic string, fails ...int) func(string) error {
	n := 0
	set := map[int]bool{}
	for _, f := range fails {
		set[f] = true
	}
	return func(t string) error {
		if t != topic {
			return nil
		}
		n++
		if set[n] {
			return fmt.Errorf("injected failure of append %d to %s", n, topic)
		}
		return nil
	}
}

var errInjected = errors.New("injected append failure")

// testConfig parses props into a broker config with the wall clock and a
// logger that writes to stderr only with KBROKER_TEST_LOG set.
func testConfig(t *testing.T, props map[string]string) config.Config {
	t.Helper()
	cfg, _, err := config.ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	out := io.Discard
	if os.Getenv("KBROKER_TEST_LOG") != "" {
		out = os.Stderr
	}
	cfg.Logger = slog.New(slog.NewTextHandler(out, nil))
	cfg.Now = time.Now
	return cfg
}

// newFaultyHost runs a Host over a real replica.Manager in a temporary log
// dir, with single-partition internal topics; everything is stopped when
// the test ends.
func newFaultyHost(t *testing.T, overrides map[string]string) (*Host, *faultyReplicas) {
	t.Helper()
	dir := t.TempDir()
	p := map[string]string{
		"log.dirs":                             dir,
		"offsets.topic.num.partitions":         "1",
		"transaction.state.log.num.partitions": "1",
		"group.initial.rebalance.delay.ms":     "0",
	}
	for k, v := range overrides {
		p[k] = v
	}
	cfg := testConfig(t, p)
	closing := make(chan struct{})
	rm := replica.NewManager(cfg, closing)
	if err := rm.OpenDirs(nil); err != nil {
		t.Fatal(err)
	}
	store, err := controller.OpenFileStore(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Load(store); err != nil {
		t.Fatal(err)
	}
	f := &faultyReplicas{Manager: rm}
	h := NewHost(cfg, f, closing)
	if err := h.Load(store); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(closing)
		h.CloseShares()
		h.Close()
		rm.Stop()
		if err := rm.CloseStorage(); err != nil {
			t.Error(err)
		}
		store.Close()
	})
	return h, f
}

// await waits for the answer on tok.
// newGroupsHost is a faulty host with a topic "t" of the given partitions
// and its group coordinators loaded.
func newGroupsHost(t *testing.T, partitions int32) (*Host, *faultyReplicas) {
	t.Helper()
	h, f := newFaultyHost(t, nil)
	if _, kerrv, msg := f.CreateTopic("t", partitions, 1, nil, false); kerrv != nil {
		t.Fatal(kerrv, msg)
	}
	if err := h.EnsureGroups(); err != nil {
		t.Fatal(err)
	}
	return h, f
}

// consumerJoin is a KIP-848 member's first heartbeat, subscribed to "t".
func consumerJoin(t *testing.T, h *Host, group, member string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{"t"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return await(t, groupRequest(t, h, req), "heartbeat").(*kmsg.ConsumerGroupHeartbeatResponse)
}

func await(t *testing.T, tok Token, what string) kmsg.Response {
	t.Helper()
	select {
	case r := <-tok:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer", what)
		return nil
	}
}

func txnRequest(t *testing.T, h *Host, req kmsg.Request) kmsg.Response {
	t.Helper()
	tok := make(Token, 1)
	if err := h.TxnRequest(group.Client{ID: "c", Host: "127.0.0.1"}, req, tok); err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return await(t, tok, kmsg.NameForKey(req.Key()))
}

func groupRequest(t *testing.T, h *Host, req kmsg.Request) Token {
	t.Helper()
	tok := make(Token, 1)
	if err := h.GroupRequest(group.Client{ID: "c", Host: "127.0.0.1"}, req, tok); err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return tok
}

// describeTxn returns the state of transactional id id.
func describeTxn(t *testing.T, h *Host, id string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := txnRequest(t, h, req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 || resp.TransactionStates[0].ErrorCode != 0 {
		t.Fatalf("describe %s: %+v", id, resp.TransactionStates)
	}
	return resp.TransactionStates[0].State
}

// TestTxnCompletionWriteFailure: the write of a transaction's completion
// record fails after its markers were written, and fails again when the
// coordinator is reloaded. Neither may crash the broker (both used to
// dereference the dropped coordinator); the reload timer, with no client
// call, brings the coordinator back and completes the transaction.
func TestTxnCompletionWriteFailure(t *testing.T) {
	h, f := newFaultyHost(t, nil)
	if _, kerrv, msg := f.CreateTopic("t", 1, 1, nil, false); kerrv != nil {
		t.Fatal(kerrv, msg)
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 3
	init.TransactionalID = kmsg.StringPtr("tx")
	init.TransactionTimeoutMillis = 60000
	ir := txnRequest(t, h, init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx", ir.ProducerID, ir.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if ar := txnRequest(t, h, add).(*kmsg.AddPartitionsToTxnResponse); ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add partitions: %v", kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}

	// 1: PrepareCommit (written), 2: CompleteCommit (fails), 3: the
	// CompleteCommit of the reload (fails), 4: the next reload's (written).
	f.setFault(failPlan(txnStateTopic, 2, 3))
	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 3
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx", ir.ProducerID, ir.ProducerEpoch, true
	if er := txnRequest(t, h, end).(*kmsg.EndTxnResponse); er.ErrorCode != 0 {
		t.Fatalf("end txn: %v", kerr.ErrorForCode(er.ErrorCode))
	}
	// No call from here on: the reload timer must bring the coordinator
	// back (twice: the first reload fails to complete the transaction).
	loaded := func() bool {
		h.txns.mu.Lock()
		defer h.txns.mu.Unlock()
		return h.txns.mu.c != nil
	}
	deadline := time.Now().Add(15 * time.Second)
	for !loaded() {
		if time.Now().After(deadline) {
			t.Fatal("transaction coordinator not reloaded after failed completion writes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := describeTxn(t, h, "tx"); st != "CompleteCommit" {
		t.Fatalf("state after the reloads: %s, want CompleteCommit", st)
	}
	p := f.PartitionOf("t", 0)
	if p.LastStableOffset() != p.HighWatermark() || p.HighWatermark() == 0 {
		t.Fatalf("LSO %d HW %d: the commit marker is missing", p.LastStableOffset(), p.HighWatermark())
	}
}

// TestGroupCallRacesDrop: many concurrent commits while some writes fail.
// A call must never run against coordinators another call dropped between
// its load check and its lock (that was a nil dereference), and every
// request is answered: committed, or COORDINATOR_NOT_AVAILABLE.
func TestGroupCallRacesDrop(t *testing.T) {
	h, f := newGroupsHost(t, 1)
	var mu sync.Mutex
	n := 0
	f.setFault(func(topic string) error {
		if topic != offsetsTopic {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if n++; n%3 == 0 {
			return errInjected
		}
		return nil
	})
	const workers, each = 8, 150
	var wg sync.WaitGroup
	codes := make(chan int16, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Version = 8
				req.Group = fmt.Sprintf("g%d", w)
				req.Generation = -1
				req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: int64(i)}}}}
				tok := make(Token, 1)
				if err := h.GroupRequest(group.Client{ID: "c"}, req, tok); err != nil {
					t.Errorf("commit: %v", err)
					return
				}
				select {
				case r := <-tok:
					codes <- r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
				case <-time.After(10 * time.Second):
					t.Error("commit not answered")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(codes)
	ok, failed := 0, 0
	for c := range codes {
		switch c {
		case 0:
			ok++
		case kerr.CoordinatorNotAvailable.Code:
			failed++
		default:
			t.Fatalf("commit answered %v", kerr.ErrorForCode(c))
		}
	}
	if ok == 0 || failed == 0 {
		t.Fatalf("%d committed, %d failed: the fault did not act", ok, failed)
	}
}

func joinReq(groupID, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.ProtocolType = groupID, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 60000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	return req
}

// joinWithID runs the v4+ member id round trip and returns the member id.
func joinWithID(t *testing.T, h *Host, groupID string) string {
	t.Helper()
	r := await(t, groupRequest(t, h, joinReq(groupID, "")), "join").(*kmsg.JoinGroupResponse)
	if r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(r.ErrorCode))
	}
	return r.MemberID
}

func syncReq(groupID, member string, gen int32) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = groupID, member, gen
	return req
}

// failNextOffsetsWrite makes a write to __consumer_offsets fail through an
// unrelated group's commit, so that the coordinators are dropped.
func failNextOffsetsWrite(t *testing.T, h *Host, f *faultyReplicas) {
	t.Helper()
	f.setFault(failPlan(offsetsTopic, 1))
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation = "unrelated", -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	r := await(t, groupRequest(t, h, req), "commit").(*kmsg.OffsetCommitResponse)
	if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("failed commit answered %v", kerr.ErrorForCode(c))
	}
	f.setFault(nil)
}

// TestParkedJoinAndSyncAnsweredOnDrop: a JoinGroup waiting for its
// rebalance and a follower's SyncGroup waiting for the leader are answered
// COORDINATOR_NOT_AVAILABLE when a failed write drops the coordinator,
// instead of hanging until shutdown.
func TestParkedJoinAndSyncAnsweredOnDrop(t *testing.T) {
	h, f := newFaultyHost(t, nil)
	if _, kerrv, msg := f.CreateTopic("t", 1, 1, nil, false); kerrv != nil {
		t.Fatal(kerrv, msg)
	}
	// Leader a alone: generation 1.
	a := joinWithID(t, h, "g")
	ja := await(t, groupRequest(t, h, joinReq("g", a)), "join a").(*kmsg.JoinGroupResponse)
	if ja.ErrorCode != 0 || ja.LeaderID != a {
		t.Fatalf("join a: %v leader %s", kerr.ErrorForCode(ja.ErrorCode), ja.LeaderID)
	}
	sync := syncReq("g", a, ja.Generation)
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a, MemberAssignment: []byte{0}}}
	if sa := await(t, groupRequest(t, h, sync), "sync a").(*kmsg.SyncGroupResponse); sa.ErrorCode != 0 {
		t.Fatalf("sync a: %v", kerr.ErrorForCode(sa.ErrorCode))
	}

	// b joins: its JoinGroup waits until a rejoins.
	b := joinWithID(t, h, "g")
	parkedJoin := groupRequest(t, h, joinReq("g", b))
	select {
	case r := <-parkedJoin:
		t.Fatalf("b's join answered at once: %+v", r)
	default:
	}
	failNextOffsetsWrite(t, h, f)
	jb := await(t, parkedJoin, "parked join of b").(*kmsg.JoinGroupResponse)
	if jb.ErrorCode != kerr.CoordinatorNotAvailable.Code || jb.MemberID != b {
		t.Fatalf("parked join answered %v member %q, want COORDINATOR_NOT_AVAILABLE for %q", kerr.ErrorForCode(jb.ErrorCode), jb.MemberID, b)
	}

	// Reloaded from the log: a is the member of generation 1 and b is
	// unknown (its member id was never written). b joins anew, a rejoins,
	// both get generation 2 with a as leader; b's SyncGroup then waits for
	// a's.
	b = joinWithID(t, h, "g")
	parkedJoin = groupRequest(t, h, joinReq("g", b))
	ja = await(t, groupRequest(t, h, joinReq("g", a)), "rejoin a").(*kmsg.JoinGroupResponse)
	jb = await(t, parkedJoin, "join b").(*kmsg.JoinGroupResponse)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || jb.LeaderID != a || jb.Generation != ja.Generation {
		t.Fatalf("rejoin: a %v, b %v leader %s", kerr.ErrorForCode(ja.ErrorCode), kerr.ErrorForCode(jb.ErrorCode), jb.LeaderID)
	}
	parkedSync := groupRequest(t, h, syncReq("g", b, jb.Generation))
	select {
	case r := <-parkedSync:
		t.Fatalf("follower's sync answered before the leader's: %+v", r)
	default:
	}
	failNextOffsetsWrite(t, h, f)
	if sb := await(t, parkedSync, "parked sync of b").(*kmsg.SyncGroupResponse); sb.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("parked sync answered %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(sb.ErrorCode))
	}
	h.groups.mu.Lock()
	left := len(h.groups.mu.parked)
	h.groups.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d requests still parked after the drop", left)
	}
}

// TestConsumerHeartbeatWriteFailure: a KIP-848 heartbeat whose records
// cannot be written is answered with an error, not as a successful join.
func TestConsumerHeartbeatWriteFailure(t *testing.T) {
	h, f := newGroupsHost(t, 2)
	join := func() *kmsg.ConsumerGroupHeartbeatResponse { return consumerJoin(t, h, "cg", "member-1") }
	f.setFault(failPlan(offsetsTopic, 1))
	r := join()
	if r.ErrorCode != kerr.CoordinatorNotAvailable.Code || r.ErrorMessage == nil || r.MemberEpoch != 0 || r.Assignment != nil {
		t.Fatalf("heartbeat with a failed write: %v epoch %d assignment %+v, want COORDINATOR_NOT_AVAILABLE and nothing else",
			kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, r.Assignment)
	}
	f.setFault(nil)
	if r = join(); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("heartbeat after the failure: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
}

// TestTimerPanicRecovered: a panic in the transaction coordinator's timer
// (here in the append of the abort of a timed-out transaction) is
// recovered, counted and logged; the coordinator is reloaded from its log
// by the reload timer and aborts the transaction on a later tick.
func TestTimerPanicRecovered(t *testing.T) {
	h, f := newFaultyHost(t, map[string]string{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "20"})
	if _, kerrv, msg := f.CreateTopic("t", 1, 1, nil, false); kerrv != nil {
		t.Fatal(kerrv, msg)
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 3
	init.TransactionalID = kmsg.StringPtr("slow")
	init.TransactionTimeoutMillis = 1
	ir := txnRequest(t, h, init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	// The second __transaction_state append from now on panics: the first
	// is AddPartitionsToTxn's, the second the timer's abort of the
	// transaction once it timed out.
	var mu sync.Mutex
	n := 0
	f.setFault(func(topic string) error {
		mu.Lock()
		defer mu.Unlock()
		if topic == txnStateTopic {
			if n++; n == 2 {
				panic("injected panic in a timer's append")
			}
		}
		return nil
	})
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "slow", ir.ProducerID, ir.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if ar := txnRequest(t, h, add).(*kmsg.AddPartitionsToTxnResponse); ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add partitions: %v", kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	deadline := time.Now().Add(15 * time.Second)
	for h.TimerPanics() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the timer never reached the panicking append")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// No client call: the reload timer brings the coordinator back, and
	// its tick aborts the transaction.
	for {
		h.txns.mu.Lock()
		done := h.txns.mu.c != nil && len(h.txns.mu.unwritten) == 0
		h.txns.mu.Unlock()
		if done {
			if st := describeTxn(t, h, "slow"); st == "CompleteAbort" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("transaction not aborted after the recovered panic")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.TimerPanics(); n != 1 {
		t.Fatalf("%d timer panics, want 1", n)
	}
}
