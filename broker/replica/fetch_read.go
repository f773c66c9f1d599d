package replica

import (
	"errors"
	"time"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch answers a consumer's Fetch into resp: the incremental fetch session
// it names (fetch_session.go) picks the partitions, which are read and, below
// MinBytes, waited on until MaxWaitMs or shutdown. The records are copied
// into resp; FetchSpliced leaves them in the files.
func (m *Manager) Fetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	m.FetchSpliced(req, resp, nil)
}

// FetchSpliced is Fetch with each partition's records as a pinned range of
// its segment file (storage.Section) registered with spl, whose placeholder
// stands in RecordBatches, so the connection can send them with sendfile.
// spl (when not nil) wraps resp; its writer releases the ranges.
func (m *Manager) FetchSpliced(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, spl *protocol.Spliced) {
	id := fetchReplicaID(req)
	c := m.cluster()
	var visit func(*fsPartition, time.Time) bool
	var w *fetchWatch
	if id >= 0 && c != nil {
		visit = m.followerVisit(req.Version, min(time.Second, c.cfg.LagTimeMax/8)) // fetch_replica.go
		// Woken from before the session picks what to read: a change
		// just after it picked wakes the fetch.
		w = newFetchWatch()
		m.parkedFollowers.add(w)
		defer m.parkedFollowers.remove(w)
	}
	fc, code := m.fetchSessions.begin(m.now(), req, visit)
	if code != 0 {
		resp.ErrorCode = code
		return
	}
	if id >= 0 && c != nil {
		m.replicaFetch(fc, w, resp, spl, id) // fetch_replica.go
	} else {
		m.pollFetch(fc, resp, spl)
	}
	m.fetchSessions.finish(m.now(), fc, resp)
}

// pollFetch fills resp from req, parking until MinBytes, MaxWaitMs or
// shutdown (a delayed fetch, delayed.go).
func (m *Manager) pollFetch(fc fetchCtx, resp *kmsg.FetchResponse, spl *protocol.Spliced) {
	deadline := m.now().Add(time.Duration(fc.req.MaxWaitMillis) * time.Millisecond)
	(&delayedFetch{m: m, req: fc.req, unique: fc.incremental, resp: resp, spl: spl}).run(deadline)
}

// delayedFetch is a fetch waiting for MinBytes, Kafka's DelayedFetch
// (fetch_wait.go).
type delayedFetch struct {
	m   *Manager
	req *kmsg.FetchRequest
	// unique: req lists each partition once (a session's expansion).
	unique bool
	resp   *kmsg.FetchResponse
	// spl, when not nil, takes the records as file ranges.
	spl *protocol.Spliced
	// have is what the last read found, base the partitions' appended
	// bytes just before it.
	have, base int64
}

func (m *Manager) fetchTopic(version int16, rt kmsg.FetchRequestTopic) *Topic {
	if version >= 13 {
		return m.TopicByID(rt.TopicID)
	}
	return m.TopicByName(rt.Topic)
}

// fillFetch reads every requested partition into resp (replacing its topics,
// and releasing the ranges spl held for them).
// It returns the record bytes gathered and whether to answer at once because
// a partition has an error.
func (m *Manager) fillFetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, spl *protocol.Spliced) (total int, stop bool) {
	// A parked fetch fills its answer again at each wake-up: the previous
	// fill's partition lists are reused, and a new one is sized once, so
	// a consumer tailing a busy topic does not allocate them per append.
	prev := resp.Topics
	resp.Topics = resp.Topics[:0]
	if spl != nil {
		spl.Reset()
	}
	maxBytes := int(req.MaxBytes)
	if req.Version < 3 || maxBytes <= 0 {
		maxBytes = int(^uint(0) >> 1)
	}
	for i, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		if i < len(prev) && cap(prev[i].Partitions) >= len(rt.Partitions) {
			st.Partitions = prev[i].Partitions[:0]
		} else {
			st.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(rt.Partitions))
		}
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		t := m.fetchTopic(req.Version, rt)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark = -1
			sp.LastStableOffset = -1
			sp.LogStartOffset = -1
			sp.PreferredReadReplica = -1
			// Never null: librdkafka rejects a null record set (size -1).
			sp.RecordBatches = []byte{}
			var kerrv *kerr.Error
			switch {
			case t == nil && req.Version >= 13:
				kerrv = kerr.UnknownTopicID
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
				// Kafka answers a partition it does not know before
				// reading with an empty (not null) aborted list.
				kerrv = kerr.UnknownTopicOrPartition
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			default:
				p := t.Partitions[rp.Partition]
				var n int
				n, kerrv = m.readPartition(req, rp, p, &sp, spl, maxBytes-total, total == 0)
				total += n
				if kerrv != nil && fetchReplicaID(req) < 0 {
					// A failed read answers a consumer no offsets, as
					// Kafka's LogReadResult for an error (-1 each).
					// Followers keep them: on OFFSET_OUT_OF_RANGE the
					// replica fetcher restarts at the leader's log start
					// from this answer (Kafka's asks with ListOffsets).
					sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				}
			}
			if kerrv != nil {
				sp.ErrorCode = kerrv.Code
				stop = true
			}
			if sp.DivergingEpoch.Epoch >= 0 {
				stop = true // the fetcher must truncate: answer now
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return total, stop
}

// readPartition fills one partition of the answer and returns its record bytes.
func (m *Manager) readPartition(req *kmsg.FetchRequest, rp kmsg.FetchRequestTopicPartition, p *Partition, sp *kmsg.FetchResponseTopicPartition, spl *protocol.Spliced, budget int, first bool) (int, *kerr.Error) {
	// On a single node a replica id changes nothing: there are no followers.
	replica := fetchReplicaID(req) >= 0 && m.cluster() != nil
	if kerrv := p.checkFetch(replica); kerrv != nil {
		return 0, kerrv
	}
	if req.Version >= 9 && rp.CurrentLeaderEpoch >= 0 {
		switch epoch := p.LeaderEpoch(); {
		case rp.CurrentLeaderEpoch < epoch:
			return 0, kerr.FencedLeaderEpoch
		case rp.CurrentLeaderEpoch > epoch:
			return 0, kerr.UnknownLeaderEpoch
		}
	}
	hw := p.HighWatermark()
	sp.HighWatermark = hw
	sp.LastStableOffset = p.LastStableOffset()
	sp.LogStartOffset = p.Log.LogStartOffset()
	readCommitted := req.IsolationLevel == 1
	maxOffset := hw
	if readCommitted {
		maxOffset = sp.LastStableOffset
	}
	if replica {
		maxOffset = p.Log.LogEndOffset() // followers copy what is not committed yet
	}
	// The last fetched epoch is checked first, as Kafka's
	// Partition.fetchRecords: a follower past this log's end whose epoch
	// ends here earlier is told where to cut (DivergingEpoch), not that
	// it is out of range.
	if req.Version >= 12 && rp.LastFetchedEpoch >= 0 && m.cluster() != nil {
		if kerrv := divergence(p, rp, sp); kerrv != nil || sp.DivergingEpoch.Epoch >= 0 {
			return 0, kerrv
		}
	}
	// Out of range is below the log start or past the log end, as Kafka's
	// LocalLog.read; an offset above the HW (or LSO) but within the log
	// reads nothing. A new leader's HW lags its predecessor's until its
	// followers fetch, so a consumer may be ahead of it; answering
	// OFFSET_OUT_OF_RANGE there makes clients reset their position.
	if rp.FetchOffset < sp.LogStartOffset || rp.FetchOffset > p.Log.LogEndOffset() {
		return 0, kerr.OffsetOutOfRange
	}
	limit := int(rp.PartitionMaxBytes)
	if budget < limit {
		limit = budget
	}
	if limit < 0 {
		limit = 0
	}
	var data []byte
	var sec *storage.Section
	var err error
	if spl != nil {
		sec, err = p.Log.ReadSection(rp.FetchOffset, limit, maxOffset, first)
	} else {
		data, err = p.Log.Read(rp.FetchOffset, limit, maxOffset, first)
	}
	switch {
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return 0, kerr.OffsetOutOfRange
	case err != nil:
		m.log.Error("fetch read failed", "topic", p.Topic.Meta.Name, "partition", p.Index, "offset", rp.FetchOffset, "err", err)
		return 0, kerr.KafkaStorageError
	}
	n := len(data)
	switch {
	case sec != nil:
		sp.RecordBatches = spl.Add(sec)
		n = int(sec.Len())
	case data != nil:
		sp.RecordBatches = data
	}
	if readCommitted {
		// Clients drop records of these producers from FirstOffset up to the abort marker.
		sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		if rp.FetchOffset < maxOffset {
			sp.AbortedTransactions = p.AbortedBetween(rp.FetchOffset, maxOffset)
		}
	}
	return n, nil
}

// divergence checks a fetch's LastFetchedEpoch (Fetch v12+, KIP-320) in
// cluster mode, as Kafka's Partition.fetchRecords: the log's end of that
// epoch is looked up; an epoch this log cannot place, or a fetch offset
// below the log start (diverging or not), is OFFSET_OUT_OF_RANGE; a log
// whose epoch is older or ends before the fetch offset diverged from the
// fetcher's, which is told where (DivergingEpoch) and gets no records.
func divergence(p *Partition, rp kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition) *kerr.Error {
	epoch, end := p.Log.EndOffsetForEpoch(rp.LastFetchedEpoch)
	if epoch == storage.UndefinedEpoch || end == storage.UndefinedEpochOffset || rp.FetchOffset < p.Log.LogStartOffset() {
		return kerr.OffsetOutOfRange
	}
	if epoch < rp.LastFetchedEpoch || end < rp.FetchOffset {
		sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = epoch, end
	}
	return nil
}
