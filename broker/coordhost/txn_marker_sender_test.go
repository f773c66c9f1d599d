package coordhost

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/coordinator/consumer"
	"github.com/kbroker/kbroker/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeMarkerCluster is a cluster of brokers as the marker sender sees it:
// a leader table and remote brokers whose answers the test scripts.
type fakeMarkerCluster struct {
	self int32

	mu      sync.Mutex
	leaders map[txn.TopicPartition]int32 // absent: deleted
	sent    []sentMarkers
	// answer decides the code of one partition's marker at broker (nil: 0).
	answer func(broker int32, tp txn.TopicPartition) int16
	// fail makes the next round trips to broker fail as a network error.
	fail map[int32]int
	// block, when set, holds every request to broker until closed.
	block map[int32]chan struct{}
}

// sentMarkers is one WriteTxnMarkers request as a broker received it.
type sentMarkers struct {
	broker int32
	req    *kmsg.WriteTxnMarkersRequest
}

func (f *fakeMarkerCluster) BrokerID() int32 { return f.self }

func (f *fakeMarkerCluster) LiveBrokers() int { return 3 }

func (f *fakeMarkerCluster) Topics() []consumer.TopicInfo { return nil }

func (f *fakeMarkerCluster) Leader(topic string, partition int32) (int32, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.leaders[txn.TopicPartition{Topic: topic, Partition: partition}]
	return l, ok
}

func (f *fakeMarkerCluster) setLeader(tp txn.TopicPartition, l int32) {
	f.mu.Lock()
	f.leaders[tp] = l
	f.mu.Unlock()
}

func (f *fakeMarkerCluster) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.WriteTxnMarkersRequest)
	f.mu.Lock()
	f.sent = append(f.sent, sentMarkers{broker, r})
	blk := f.block[broker]
	fail := f.fail[broker] > 0
	if fail {
		f.fail[broker]--
	}
	f.mu.Unlock()
	if blk != nil {
		select {
		case <-blk:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail {
		return nil, errors.New("connection refused")
	}
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				var code int16
				f.mu.Lock()
				if f.answer != nil {
					code = f.answer(broker, txn.TopicPartition{Topic: t.Topic, Partition: p})
				}
				f.mu.Unlock()
				rt.Partitions = append(rt.Partitions, kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: p, ErrorCode: code})
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

// requestsTo returns the requests broker received.
func (f *fakeMarkerCluster) requestsTo(broker int32) []*kmsg.WriteTxnMarkersRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*kmsg.WriteTxnMarkersRequest
	for _, s := range f.sent {
		if s.broker == broker {
			out = append(out, s.req)
		}
	}
	return out
}

// senderHarness runs a marker sender against a fake cluster; local writes
// and completions are recorded.
type senderHarness struct {
	cl   *fakeMarkerCluster
	s    *markerSender
	done chan txn.Marker

	mu    sync.Mutex
	local []txn.TopicPartition
}

func newSenderHarness(t *testing.T) *senderHarness {
	h := &senderHarness{
		cl:   &fakeMarkerCluster{self: 1, leaders: map[txn.TopicPartition]int32{}, fail: map[int32]int{}, block: map[int32]chan struct{}{}},
		done: make(chan txn.Marker, 16),
	}
	local := func(topic string, partition int32, m txn.Marker, done func(int16)) {
		h.mu.Lock()
		h.local = append(h.local, txn.TopicPartition{Topic: topic, Partition: partition})
		h.mu.Unlock()
		done(0)
	}
	h.s = newMarkerSender(h.cl, local, func(m txn.Marker) { h.done <- m }, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	h.s.backoff = 5 * time.Millisecond
	h.s.start()
	t.Cleanup(h.s.stop)
	return h
}

func tp(topic string, p int32) txn.TopicPartition {
	return txn.TopicPartition{Topic: topic, Partition: p}
}

// completed waits for the next completion.
func (h *senderHarness) completed(t *testing.T) txn.Marker {
	t.Helper()
	select {
	case m := <-h.done:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no transaction completed within 10s")
		return txn.Marker{}
	}
}

// notCompleted checks that no completion is waiting.
func (h *senderHarness) notCompleted(t *testing.T, why string) {
	t.Helper()
	select {
	case m := <-h.done:
		t.Fatalf("%s: transaction %q completed early", why, m.TxnID)
	default:
	}
}

// requestPartitions lists "txn producer id/topic/partition" of a request.
func requestPartitions(req *kmsg.WriteTxnMarkersRequest) []txn.TopicPartition {
	var out []txn.TopicPartition
	for _, m := range req.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				out = append(out, tp(t.Topic, p))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// TestMarkerSenderBatchesPerBroker: the markers of two transactions due
// at the same broker travel in one request; local partitions are written
// locally; each transaction completes once, after all its partitions.
func TestMarkerSenderBatchesPerBroker(t *testing.T) {
	h := newSenderHarness(t)
	for p, l := range map[txn.TopicPartition]int32{tp("t", 0): 2, tp("t", 1): 3, tp("t", 2): 1, tp("u", 0): 2} {
		h.cl.setLeader(p, l)
	}
	// Hold broker 3 so that transaction a cannot complete yet.
	release := make(chan struct{})
	h.cl.block[3] = release
	h.s.enqueue([]txn.Marker{
		{TxnID: "a", ProducerID: 10, ProducerEpoch: 1, Commit: true, CoordinatorEpoch: 4, Partitions: []txn.TopicPartition{tp("t", 0), tp("t", 1), tp("t", 2)}},
		{TxnID: "b", ProducerID: 11, ProducerEpoch: 2, Commit: false, Partitions: []txn.TopicPartition{tp("t", 0), tp("u", 0)}},
	})
	if m := h.completed(t); m.TxnID != "b" {
		t.Fatalf("first completion is %q, want b (a waits for broker 3)", m.TxnID)
	}
	h.notCompleted(t, "broker 3 has not answered")
	reqs := h.cl.requestsTo(2)
	if len(reqs) != 1 {
		t.Fatalf("broker 2 got %d requests, want one batch", len(reqs))
	}
	if got := requestPartitions(reqs[0]); len(got) != 3 || len(reqs[0].Markers) != 2 {
		t.Fatalf("broker 2's batch holds %d markers over %v, want both transactions over t-0, t-0, u-0", len(reqs[0].Markers), got)
	}
	for _, m := range reqs[0].Markers {
		if m.ProducerID == 10 && (!m.Committed || m.CoordinatorEpoch != 4 || m.ProducerEpoch != 1) {
			t.Fatalf("marker of a sent as %+v", m)
		}
		if m.ProducerID == 11 && m.Committed {
			t.Fatal("abort marker of b sent as a commit")
		}
	}
	close(release)
	if m := h.completed(t); m.TxnID != "a" || !m.Commit {
		t.Fatalf("second completion is %+v, want a's commit", m)
	}
	h.mu.Lock()
	local := h.local
	h.mu.Unlock()
	if len(local) != 1 || local[0] != tp("t", 2) {
		t.Fatalf("local writes %v, want t-2 only", local)
	}
	if n := len(h.cl.requestsTo(1)); n != 0 {
		t.Fatalf("%d requests sent to this broker over the network", n)
	}
	if n := h.s.pendingCount(); n != 0 {
		t.Fatalf("%d markers still pending", n)
	}
}

// TestMarkerSenderRetriesAfterLeaderMove: NOT_LEADER_OR_FOLLOWER makes the
// sender look the leader up again and send there; a network failure is
// retried; the transaction completes only after the new leader answered.
func TestMarkerSenderRetriesAfterLeaderMove(t *testing.T) {
	h := newSenderHarness(t)
	h.cl.setLeader(tp("t", 0), 2)
	h.cl.setLeader(tp("t", 1), 3)
	h.cl.fail[3] = 2 // two refused connections first
	h.cl.answer = func(broker int32, p txn.TopicPartition) int16 {
		if broker == 2 {
			// The leader moved: the cache learns it as the answer leaves.
			h.cl.leaders[p] = 4
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}
	h.s.enqueue([]txn.Marker{{TxnID: "a", ProducerID: 10, Commit: true, Partitions: []txn.TopicPartition{tp("t", 0), tp("t", 1)}}})
	h.completed(t)
	if n := len(h.cl.requestsTo(2)); n != 1 {
		t.Fatalf("old leader got %d requests, want 1", n)
	}
	if n := len(h.cl.requestsTo(4)); n != 1 {
		t.Fatalf("new leader got %d requests, want 1", n)
	}
	if n := len(h.cl.requestsTo(3)); n != 3 {
		t.Fatalf("broker 3 got %d requests, want 2 failed + 1", n)
	}
	h.notCompleted(t, "after completion")
}

// TestMarkerSenderOfflineAndDeletedPartitions: a partition without a
// leader holds the transaction until one is elected; a partition of a
// deleted topic is dropped; a retriable error code is retried.
func TestMarkerSenderOfflineAndDeletedPartitions(t *testing.T) {
	h := newSenderHarness(t)
	h.cl.setLeader(tp("t", 0), -1) // offline
	h.cl.setLeader(tp("t", 1), 2)
	// tp("gone", 0) is unknown to the cache: deleted.
	var mu sync.Mutex
	tries := 0
	h.cl.answer = func(broker int32, p txn.TopicPartition) int16 {
		mu.Lock()
		defer mu.Unlock()
		if p == tp("t", 1) && tries < 2 {
			tries++
			return kerr.NotEnoughReplicas.Code
		}
		return 0
	}
	h.s.enqueue([]txn.Marker{{TxnID: "a", ProducerID: 10, Partitions: []txn.TopicPartition{tp("gone", 0), tp("t", 0), tp("t", 1)}}})
	// t-1 is retried until it succeeds; t-0 keeps the transaction open.
	waitCond(t, func() bool { return len(h.cl.requestsTo(2)) == 3 }, "t-1 retried twice")
	h.notCompleted(t, "t-0 has no leader")
	h.cl.setLeader(tp("t", 0), 3)
	h.completed(t)
	for _, r := range append(h.cl.requestsTo(2), h.cl.requestsTo(3)...) {
		for _, p := range requestPartitions(r) {
			if p.Topic == "gone" {
				t.Fatal("a marker was sent for a deleted partition")
			}
		}
	}
}

// TestMarkerSenderFencedAndCleared: TRANSACTION_COORDINATOR_FENCED stops
// the transaction's markers without completing it; markers cleared while
// in flight do not complete either; a stale producer epoch counts as done.
func TestMarkerSenderFencedAndCleared(t *testing.T) {
	h := newSenderHarness(t)
	h.cl.setLeader(tp("t", 0), 2)
	h.cl.setLeader(tp("t", 1), 3)
	h.cl.answer = func(broker int32, p txn.TopicPartition) int16 {
		switch broker {
		case 2:
			return kerr.TransactionCoordinatorFenced.Code
		case 4:
			return kerr.InvalidProducerEpoch.Code
		}
		return 0
	}
	release := make(chan struct{})
	h.cl.block[3] = release
	h.s.enqueue([]txn.Marker{{TxnID: "fenced", ProducerID: 10, Partitions: []txn.TopicPartition{tp("t", 0)}}})
	h.s.enqueue([]txn.Marker{{TxnID: "cleared", ProducerID: 11, Partitions: []txn.TopicPartition{tp("t", 1)}}})
	waitCond(t, func() bool { return len(h.cl.requestsTo(2)) == 1 && len(h.cl.requestsTo(3)) == 1 }, "both sent")
	waitCond(t, func() bool { return h.s.pendingCount() == 1 }, "the fenced transaction dropped")
	h.s.clear()
	close(release)
	h.cl.setLeader(tp("t", 2), 4)
	h.s.enqueue([]txn.Marker{{TxnID: "stale", ProducerID: 12, Partitions: []txn.TopicPartition{tp("t", 2)}}})
	if m := h.completed(t); m.TxnID != "stale" {
		t.Fatalf("completed %q, want only stale", m.TxnID)
	}
	h.notCompleted(t, "fenced and cleared transactions")
	if n := len(h.cl.requestsTo(2)); n != 1 {
		t.Fatalf("fenced marker sent %d times, want 1", n)
	}
}

// TestMarkerSenderEmptyMarkerCompletes: a prepared transaction with no
// partitions completes at once (on the sender's goroutine, not inside
// enqueue, which runs under the coordinator's lock).
func TestMarkerSenderEmptyMarkerCompletes(t *testing.T) {
	h := newSenderHarness(t)
	h.s.enqueue([]txn.Marker{{TxnID: "empty", ProducerID: 1}})
	if m := h.completed(t); m.TxnID != "empty" {
		t.Fatalf("completed %q", m.TxnID)
	}
}

func waitCond(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
