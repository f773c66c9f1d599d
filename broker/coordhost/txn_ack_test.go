package coordhost

import (
	"fmt"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The transaction coordinator answers only from state whose
// __transaction_state record is acknowledged (replicated to the ISR), and
// never from a coordinator dropped (and replayed) meanwhile. These tests
// hold a record unacknowledged by giving its partition an ISR of {1, 2}
// whose follower, broker 2, fetches only when the test says so.

// setISR changes the ISR of a partition broker 1 leads, in the same leader
// epoch (an ISR change from the controller).
func (c *clusterHost) setISR(topic string, partition int32, isr []int32) {
	c.t.Helper()
	e := c.epoch[topicKey(topic, partition)]
	st := replica.PartitionState{LeaderEpoch: e, ControllerEpoch: 1, Leader: 1, ISR: isr, Replicas: []int32{1, 2}, ZKVersion: e}
	if err := c.rm.MakeLeader(topic, partition, c.ids[topic], st); err != nil {
		c.t.Fatalf("ISR of %s-%d to %v: %v", topic, partition, isr, err)
	}
}

func topicKey(topic string, partition int32) string {
	return fmt.Sprintf("%s-%d", topic, partition)
}

// followerFetch is broker 2 fetching topic-partition at its log end: the
// HW moves there and the appends below it are acknowledged.
func (c *clusterHost) followerFetch(topic string, partition int32) {
	c.t.Helper()
	p := c.rm.PartitionOf(topic, partition)
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis = 12, 2, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	fetched := p.Log.LogEndOffset()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, fetched, 1<<20
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p.LeaderEpoch(), -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	c.rm.Fetch(req, resp)
	// A record appended meanwhile (a coordinator's write in flight) may
	// lie past the fetch: the HW covers what the follower now has.
	if hw := p.HighWatermark(); hw < fetched {
		c.t.Fatalf("%s-%d: HW %d after the follower fetched to the log end %d", topic, partition, hw, fetched)
	}
}

// txnAckSetup makes broker 1 lead t-0 (ISR {1}) and both
// __transaction_state partitions, starts a producer for an id of
// partition 0 (acknowledged at once, ISR {1}), optionally adds t-0 to its
// transaction, and then gives __transaction_state-0 the ISR {1, 2}.
func txnAckSetup(t *testing.T, addT0 bool) (c *clusterHost, id string, pid int64, epoch int16) {
	t.Helper()
	c = newClusterHost(t)
	c.move("t", 0, true)
	c.move(txnStateTopic, 0, true)
	c.move(txnStateTopic, 1, true)
	id = idIn("tx", 0)
	if addT0 {
		pid, epoch = initTxn(t, c.h, id)
	} else {
		ireq := kmsg.NewPtrInitProducerIDRequest()
		ireq.Version = 3
		ireq.TransactionalID, ireq.TransactionTimeoutMillis = &id, 60000
		ir := txnRequest(t, c.h, ireq).(*kmsg.InitProducerIDResponse)
		if ir.ErrorCode != 0 {
			t.Fatalf("InitProducerID %s: %v", id, kerr.ErrorForCode(ir.ErrorCode))
		}
		pid, epoch = ir.ProducerID, ir.ProducerEpoch
	}
	c.setISR(txnStateTopic, 0, []int32{1, 2})
	return c, id, pid, epoch
}

// dropTxnCoordinator drops the transaction coordinator, as a failed write
// of another call does.
func dropTxnCoordinator(h *Host) {
	h.txns.mu.Lock()
	defer h.txns.mu.Unlock()
	h.txns.dropLocked()
}

// notWithin fails the test if ch delivers within d (used while a coordinator's
// record is held unreplicated).
func notWithin[T any](t *testing.T, ch <-chan T, d time.Duration, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s answered %v before its coordinator's record was replicated", what, v)
	case <-time.After(d):
	}
}

func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer", what)
		panic("unreachable")
	}
}

// TestAddTxnPartitionWaitsForItsRecord: a produce (v12+) on the
// coordinator's own broker adds its partition to the transaction and may
// append its batch only once that record is replicated; a produce checked
// meanwhile against the same transaction (KIP-890 part 1 verification,
// which writes nothing) waits for it too. Before, in a cluster, both
// answered before the acknowledgement: if the record was then lost, the
// batch was in the log while the replayed coordinator did not count its
// partition in the transaction, so the transaction's markers skipped it and
// the next transaction's marker decided it (the fault test's aborted read
// and lost committed write).
func TestAddTxnPartitionWaitsForItsRecord(t *testing.T) {
	c, id, pid, epoch := txnAckSetup(t, false)
	added := make(chan int16, 1)
	go func() { added <- c.h.AddTxnPartition(id, pid, epoch, "t", 0) }()
	notWithin(t, added, 300*time.Millisecond, "AddTxnPartition")
	verified := make(chan int16, 1)
	go func() { verified <- c.h.VerifyTxnPartition(id, pid, epoch, "t", 0) }()
	notWithin(t, verified, 300*time.Millisecond, "VerifyTxnPartition")

	c.followerFetch(txnStateTopic, 0)
	if code := within(t, added, "AddTxnPartition"); code != 0 {
		t.Fatalf("AddTxnPartition: %v after its record was replicated", kerr.ErrorForCode(code))
	}
	if code := within(t, verified, "VerifyTxnPartition"); code != 0 {
		t.Fatalf("VerifyTxnPartition: %v after the record was replicated", kerr.ErrorForCode(code))
	}
}

// TestAddTxnPartitionLostWithItsCoordinator: the coordinator that wrote the
// record adding a partition is dropped before the record is acknowledged;
// the reloaded one does not have it. The produce must then fail (and be
// retried against the reloaded coordinator), even though the record is
// acknowledged later.
func TestAddTxnPartitionLostWithItsCoordinator(t *testing.T) {
	c, id, pid, epoch := txnAckSetup(t, false)
	added := make(chan int16, 1)
	go func() { added <- c.h.AddTxnPartition(id, pid, epoch, "t", 0) }()
	notWithin(t, added, 300*time.Millisecond, "AddTxnPartition")

	dropTxnCoordinator(c.h)
	if s := txnState(t, c.h, id); s != "Empty" {
		t.Fatalf("%s is %s in the reloaded coordinator, want Empty (the add is not acknowledged)", id, s)
	}
	c.followerFetch(txnStateTopic, 0)
	if code := within(t, added, "AddTxnPartition"); code == 0 {
		t.Fatal("AddTxnPartition succeeded although the coordinator serving the transaction does not count the partition in it")
	}
	// The retry adds it to the reloaded coordinator, once the follower
	// has its record.
	txnLog := c.rm.PartitionOf(txnStateTopic, 0).Log
	before := txnLog.LogEndOffset()
	go func() { added <- c.h.AddTxnPartition(id, pid, epoch, "t", 0) }()
	waitCond(t, func() bool { return txnLog.LogEndOffset() > before }, "the retried add's record")
	c.followerFetch(txnStateTopic, 0)
	if code := within(t, added, "AddTxnPartition retry"); code != 0 {
		t.Fatalf("AddTxnPartition retry: %v", kerr.ErrorForCode(code))
	}
	if s := txnState(t, c.h, id); s != "Ongoing" {
		t.Fatalf("%s is %s after the retried add, want Ongoing", id, s)
	}
}

// TestEndTxnAcknowledgedAfterReload: a PrepareCommit acknowledged only
// after its coordinator was dropped and the partition replayed without it
// is answered NOT_COORDINATOR and its markers are not written, as Kafka's
// coordinator answers an append whose coordinator epoch changed: the
// coordinator now serving the transaction has it Ongoing and may abort it,
// so a success here, with commit markers on their way, is what split a
// transaction between commit and abort.
func TestEndTxnAcknowledgedAfterReload(t *testing.T) {
	c, id, pid, epoch := txnAckSetup(t, true)
	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 3
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	tok := make(Token, 1)
	if err := c.h.TxnRequest(group.Client{}, end, tok); err != nil {
		t.Fatal(err)
	}
	notWithin(t, (<-chan kmsg.Response)(tok), 300*time.Millisecond, "EndTxn")

	dropTxnCoordinator(c.h)
	if s := txnState(t, c.h, id); s != "Ongoing" {
		t.Fatalf("%s is %s in the reloaded coordinator, want Ongoing (PrepareCommit not acknowledged)", id, s)
	}
	c.followerFetch(txnStateTopic, 0)
	r := within(t, (<-chan kmsg.Response)(tok), "EndTxn").(*kmsg.EndTxnResponse)
	if r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("EndTxn acknowledged after the reload answered %v, want NOT_COORDINATOR", kerr.ErrorForCode(r.ErrorCode))
	}
	if leo := c.rm.PartitionOf("t", 0).Log.LogEndOffset(); leo != 0 {
		t.Fatalf("t-0 has %d records: the dropped coordinator's commit marker was written", leo)
	}
}
