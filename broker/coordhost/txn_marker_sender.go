package coordhost

// The transaction coordinator's marker sender in cluster mode (Kafka's
// TransactionMarkerChannelManager). A prepared transaction's markers go to
// the leader of each of its partitions, as the metadata cache names it: in
// one WriteTxnMarkers request per destination broker holding every marker
// due there (at most one request in flight per broker), or, for partitions
// this broker leads, straight to the local partition. A partition answers
// once its marker is replicated (acks=all, api/write_txn_markers.go). The
// transaction is completed (MarkersWritten, then CompleteCommit/Abort in
// __transaction_state) only when every one of its partitions acknowledged.
//
// Per partition answer, as Kafka's TransactionMarkerRequestCompletionHandler:
//   - none: done;
//   - NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS
//     (_AFTER_APPEND), REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, a failed
//     request, and anything unexpected: tried again after markerBackoff,
//     with the leader looked up again (UpdateMetadata keeps the cache
//     current);
//   - INVALID_PRODUCER_EPOCH: the partition has moved on to a newer epoch of
//     the producer, so this transaction is over there: done (a local append
//     of a stale marker is a no-op for the same reason);
//   - UNSUPPORTED_FOR_MESSAGE_FORMAT, UNSUPPORTED_VERSION: dropped from the
//     set, as Kafka does (the producer could not have written there);
//   - TRANSACTION_COORDINATOR_FENCED: a newer coordinator owns the
//     transaction; this one stops sending its markers and does not complete
//     it.
//
// A partition the metadata cache no longer knows (its topic was deleted)
// is dropped with a log line: there is nothing left to mark. A partition
// with no leader (offline) is retried, cheaply, until one is elected: its
// marker cannot be dropped, or the partition would keep an open
// transaction and a stuck last stable offset.
//
// Lock order: the sender's mu is a leaf. It never calls out with mu held;
// completions run on the sender's goroutines with no lock held, and the
// transaction host takes txns.mu for them (txns.markersDone).

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/kbroker/kbroker/coordinator/consumer"
	"github.com/kbroker/kbroker/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is what the coordinators need of the cluster in cluster mode
// (set with Host.SetCluster; the broker root implements it over the
// metadata cache and inter-broker connections).
type Cluster interface {
	// BrokerID is this broker's id.
	BrokerID() int32
	// Leader is the leader of topic-partition as the metadata cache knows
	// it: exists is false when the cache does not know the partition (its
	// topic was deleted or not created yet), leader is -1 while it has none.
	Leader(topic string, partition int32) (leader int32, exists bool)
	// Send sends req to broker on the inter-broker listener and returns its
	// answer; ctx bounds the wait.
	Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
	// LiveBrokers is the number of brokers the metadata cache lists.
	LiveBrokers() int
	// Topics are the topics the metadata cache lists, with their ids and
	// partition counts: those of the whole cluster, whether or not this
	// broker hosts a replica (KIP-848 assignment works from them).
	Topics() []consumer.TopicInfo
}

// markerBackoff is how soon a marker whose partition answered with a
// retriable error, or had no leader, is tried again.
const markerBackoff = 100 * time.Millisecond

// markerRequestTimeout bounds one WriteTxnMarkers round trip; the leader
// answers within its internal write timeout (5 s) plus the network.
const markerRequestTimeout = 15 * time.Second

// localMarkerWriter writes marker m to the local partition topic-partition
// (this broker leads it, or did when the marker was dispatched) and calls
// done with the partition's error code once it is replicated.
type localMarkerWriter func(topic string, partition int32, m txn.Marker, done func(code int16))

// markerSender delivers transaction markers to partition leaders. Its
// goroutines are owned by it: start starts the loop, stop ends it and
// waits for every request in flight.
type markerSender struct {
	cl       Cluster
	local    localMarkerWriter
	complete func(m txn.Marker) // every partition acknowledged; no lock held
	log      *slog.Logger
	now      func() time.Time
	backoff  time.Duration

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		// pending are the markers not yet acknowledged by every partition,
		// by transactional id (a transaction has one prepared state at a
		// time).
		pending map[string]*pendingMarker
		// busy are the brokers with a request in flight.
		busy map[int32]bool
		// gen numbers pendingMarkers, so that an answer for a marker
		// replaced or cleared meanwhile is ignored.
		gen     uint64
		started bool
		stopped bool
	}
}

// pendingMarker is one transaction's marker and its partitions that have
// not acknowledged it.
type pendingMarker struct {
	m    txn.Marker
	gen  uint64
	left map[txn.TopicPartition]*markerPartition
}

// markerPartition is the delivery state of one partition of a marker.
type markerPartition struct {
	inFlight  bool
	notBefore time.Time // zero: now
	// warned is set once the partition's lack of a leader was logged.
	warned bool
}

func newMarkerSender(cl Cluster, local localMarkerWriter, complete func(txn.Marker), log *slog.Logger, now func() time.Time) *markerSender {
	s := &markerSender{cl: cl, local: local, complete: complete, log: log, now: now, backoff: markerBackoff, wake: make(chan struct{}, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.pending = map[string]*pendingMarker{}
	s.mu.busy = map[int32]bool{}
	return s
}

// start starts the sender's loop.
func (s *markerSender) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started || s.mu.stopped {
		return
	}
	s.mu.started = true
	s.wg.Add(1)
	go s.run()
}

// stop ends the loop and waits for it and every request in flight; their
// answers are dropped (the next coordinator of these transactions sends
// their markers again after it loads them).
func (s *markerSender) stop() {
	s.mu.Lock()
	s.mu.stopped = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// enqueue adds markers to send. A marker for a transaction already pending
// with the same producer id, epoch and outcome is the same one and is
// kept as it is; any other replaces it.
func (s *markerSender) enqueue(markers []txn.Marker) {
	if len(markers) == 0 {
		return
	}
	s.mu.Lock()
	for _, m := range markers {
		if old := s.mu.pending[m.TxnID]; old != nil && old.m.ProducerID == m.ProducerID && old.m.ProducerEpoch == m.ProducerEpoch && old.m.Commit == m.Commit {
			continue
		}
		s.mu.gen++
		pm := &pendingMarker{m: m, gen: s.mu.gen, left: make(map[txn.TopicPartition]*markerPartition, len(m.Partitions))}
		for _, tp := range m.Partitions {
			pm.left[tp] = &markerPartition{}
		}
		s.mu.pending[m.TxnID] = pm
	}
	s.mu.Unlock()
	s.poke()
}

// clear forgets every pending marker; answers in flight for them are
// ignored. The transaction host calls it when it drops its coordinator:
// the reloaded one returns the markers of the transactions still prepared.
func (s *markerSender) clear() {
	s.forget(func(string) bool { return true })
}

// forget drops the pending markers of the transactional ids for which
// drop is true (those of a __transaction_state partition this broker no
// longer leads); answers in flight for them are ignored.
func (s *markerSender) forget(drop func(txnID string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.mu.pending {
		if drop(id) {
			delete(s.mu.pending, id)
		}
	}
}

// pending reports how many transactions wait for markers (for tests).
func (s *markerSender) pendingCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.pending)
}

func (s *markerSender) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run dispatches whatever is due, then sleeps until poked or until the
// earliest retry.
func (s *markerSender) run() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.dispatch()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !next.IsZero() {
			timer.Reset(max(next.Sub(s.now()), time.Millisecond))
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// markerItem is one marker's partitions in one request.
type markerItem struct {
	txnID string
	gen   uint64
	m     txn.Marker
	tps   []txn.TopicPartition
}

// dispatch sends every partition that is due to its leader, completes the
// transactions with no partition left, and returns when it next has
// something to retry (zero: nothing until poked).
func (s *markerSender) dispatch() time.Time {
	now := s.now()
	var next time.Time
	batches := map[int32][]markerItem{}
	var done []txn.Marker
	s.mu.Lock()
	if s.mu.stopped {
		s.mu.Unlock()
		return time.Time{}
	}
	for _, id := range sortedPending(s.mu.pending) {
		pm := s.mu.pending[id]
		byBroker := map[int32][]txn.TopicPartition{}
		for _, tp := range sortedTPs(pm.left) {
			st := pm.left[tp]
			if st.inFlight {
				continue
			}
			if now.Before(st.notBefore) {
				next = earliest(next, st.notBefore)
				continue
			}
			leader, exists := s.cl.Leader(tp.Topic, tp.Partition)
			switch {
			case !exists:
				s.log.Warn("dropping a transaction marker for a partition that no longer exists",
					"transactional_id", id, "topic", tp.Topic, "partition", tp.Partition, "commit", pm.m.Commit)
				delete(pm.left, tp)
				continue
			case leader < 0:
				if !st.warned {
					st.warned = true
					s.log.Warn("transaction marker waits for a partition with no leader",
						"transactional_id", id, "topic", tp.Topic, "partition", tp.Partition)
				}
				st.notBefore = now.Add(s.backoff)
				next = earliest(next, st.notBefore)
				continue
			case s.mu.busy[leader]:
				continue // sent when the request in flight answers (it pokes)
			}
			byBroker[leader] = append(byBroker[leader], tp)
		}
		for b, tps := range byBroker {
			for _, tp := range tps {
				pm.left[tp].inFlight = true
			}
			batches[b] = append(batches[b], markerItem{txnID: id, gen: pm.gen, m: pm.m, tps: tps})
		}
		if len(pm.left) == 0 {
			delete(s.mu.pending, id)
			done = append(done, pm.m)
		}
	}
	for b := range batches {
		s.mu.busy[b] = true
		s.wg.Add(1)
	}
	s.mu.Unlock()
	for b, items := range batches {
		go s.send(b, items)
	}
	for _, m := range done {
		s.complete(m)
	}
	return next
}

// send delivers items to broker and records the answers.
func (s *markerSender) send(broker int32, items []markerItem) {
	defer s.wg.Done()
	var codes map[itemKey]int16
	if broker == s.cl.BrokerID() {
		codes = s.sendLocal(items)
	} else {
		codes = s.sendRemote(broker, items)
	}
	s.settle(broker, items, codes)
}

// itemKey names one partition of one marker in a request.
type itemKey struct {
	txnID string
	tp    txn.TopicPartition
}

// sendLocal writes items to this broker's partitions. It returns early,
// with the answers so far, when the sender stops.
func (s *markerSender) sendLocal(items []markerItem) map[itemKey]int16 {
	type answer struct {
		k    itemKey
		code int16
	}
	n := 0
	for _, it := range items {
		n += len(it.tps)
	}
	ch := make(chan answer, n) // never blocks a writer's callback
	for _, it := range items {
		for _, tp := range it.tps {
			k := itemKey{it.txnID, tp}
			s.local(tp.Topic, tp.Partition, it.m, func(code int16) { ch <- answer{k, code} })
		}
	}
	codes := make(map[itemKey]int16, n)
	for range n {
		select {
		case a := <-ch:
			codes[a.k] = a.code
		case <-s.ctx.Done():
			return codes
		}
	}
	return codes
}

// sendRemote sends items as one WriteTxnMarkers request. A failed round
// trip leaves every code out (retried).
func (s *markerSender) sendRemote(broker int32, items []markerItem) map[itemKey]int16 {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	for _, it := range items {
		rm := kmsg.NewWriteTxnMarkersRequestMarker()
		rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = it.m.ProducerID, it.m.ProducerEpoch, it.m.Commit, it.m.CoordinatorEpoch
		for _, g := range groupTPs(it.tps) {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic, rt.Partitions = g.topic, g.partitions
			rm.Topics = append(rm.Topics, rt)
		}
		req.Markers = append(req.Markers, rm)
	}
	ctx, cancel := context.WithTimeout(s.ctx, markerRequestTimeout)
	defer cancel()
	resp, err := s.cl.Send(ctx, broker, req)
	codes := map[itemKey]int16{}
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("sending transaction markers failed; will retry", "broker", broker, "markers", len(items), "err", err)
		}
		return codes
	}
	r, ok := resp.(*kmsg.WriteTxnMarkersResponse)
	if !ok || len(r.Markers) != len(items) {
		s.log.Warn("malformed WriteTxnMarkers answer; will retry", "broker", broker)
		return codes
	}
	// Markers are answered in request order; a producer id may appear twice
	// (two transactional ids never share one, but be strict anyway).
	for i, rm := range r.Markers {
		it := items[i]
		if rm.ProducerID != it.m.ProducerID {
			continue
		}
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				codes[itemKey{it.txnID, txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}}] = rp.ErrorCode
			}
		}
	}
	return codes
}

// settle applies the answers of one request: partitions done, dropped or
// due again; then the loop runs again.
func (s *markerSender) settle(broker int32, items []markerItem, codes map[itemKey]int16) {
	now := s.now()
	var fenced []string
	s.mu.Lock()
	delete(s.mu.busy, broker)
	for _, it := range items {
		pm := s.mu.pending[it.txnID]
		if pm == nil || pm.gen != it.gen {
			continue // cleared or replaced while in flight
		}
		for _, tp := range it.tps {
			st := pm.left[tp]
			if st == nil {
				continue
			}
			st.inFlight = false
			code, answered := codes[itemKey{it.txnID, tp}]
			switch {
			case !answered:
				st.notBefore = now.Add(s.backoff)
			case code == 0:
				delete(pm.left, tp)
			case code == kerr.InvalidProducerEpoch.Code:
				s.log.Info("partition has a newer producer epoch; its transaction marker is not needed",
					"transactional_id", it.txnID, "topic", tp.Topic, "partition", tp.Partition, "producer_epoch", it.m.ProducerEpoch)
				delete(pm.left, tp)
			case code == kerr.UnsupportedForMessageFormat.Code || code == kerr.UnsupportedVersion.Code:
				s.log.Warn("partition cannot take a transaction marker; dropping it",
					"transactional_id", it.txnID, "topic", tp.Topic, "partition", tp.Partition, "err", kerr.ErrorForCode(code))
				delete(pm.left, tp)
			case code == kerr.TransactionCoordinatorFenced.Code:
				fenced = append(fenced, it.txnID)
			default:
				if !retriableMarkerCode(code) {
					s.log.Error("unexpected answer to a transaction marker; will retry",
						"transactional_id", it.txnID, "topic", tp.Topic, "partition", tp.Partition, "broker", broker, "err", kerr.ErrorForCode(code))
				}
				st.notBefore = now.Add(s.backoff)
			}
		}
	}
	for _, id := range fenced {
		if pm := s.mu.pending[id]; pm != nil {
			s.log.Warn("transaction coordinator fenced by a newer one; no longer sending this transaction's markers", "transactional_id", id)
			delete(s.mu.pending, id)
		}
	}
	s.mu.Unlock()
	s.poke()
}

// retriableMarkerCode reports the answers Kafka retries a marker on.
func retriableMarkerCode(code int16) bool {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code, kerr.KafkaStorageError.Code:
		return true
	}
	return false
}

func sortedPending(m map[string]*pendingMarker) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func sortedTPs(m map[txn.TopicPartition]*markerPartition) []txn.TopicPartition {
	tps := make([]txn.TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	return tps
}

// tpGroup is one topic's partitions.
type tpGroup struct {
	topic      string
	partitions []int32
}

// groupTPs groups sorted partitions by topic.
func groupTPs(tps []txn.TopicPartition) []tpGroup {
	var out []tpGroup
	for _, tp := range tps {
		if n := len(out); n > 0 && out[n-1].topic == tp.Topic {
			out[n-1].partitions = append(out[n-1].partitions, tp.Partition)
			continue
		}
		out = append(out, tpGroup{topic: tp.Topic, partitions: []int32{tp.Partition}})
	}
	return out
}
