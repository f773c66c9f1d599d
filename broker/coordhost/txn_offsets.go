package coordhost

// The host side of transactional offset commits (TxnOffsetCommit, and
// OffsetFetch with require_stable).

import (
	"github.com/kbroker/kbroker/coordinator/consumer"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnOffsetCommit stores a TxnOffsetCommit's offsets as a transactional
// batch of the producer in the group's __consumer_offsets partition; they
// are applied when the transaction's commit marker is written there
// (completeTxnOffsets). The answer is delivered on tok once the batch is
// acknowledged.
func (h *Host) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, tok Token) {
	fail := func(code int16) {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		deliver(tok, resp)
	}
	if _, err := h.groups.ensure(); err != nil {
		h.log.Error("group coordinator unavailable", "err", err)
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	// Partitions that do not exist in the cluster get
	// UNKNOWN_TOPIC_OR_PARTITION, as in OffsetCommit.
	known := *req
	known.Topics = nil
	var unknown []kmsg.TxnOffsetCommitResponseTopic
	for _, rt := range req.Topics {
		kt, ut := rt, kmsg.NewTxnOffsetCommitResponseTopic()
		kt.Partitions, ut.Topic = nil, rt.Topic
		for _, rp := range rt.Partitions {
			if !h.partitionExists(rt.Topic, rp.Partition) {
				ut.Partitions = append(ut.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: rp.Partition, ErrorCode: kerr.UnknownTopicOrPartition.Code})
				continue
			}
			kt.Partitions = append(kt.Partitions, rp)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
		if len(ut.Partitions) > 0 {
			unknown = append(unknown, ut)
		}
	}
	if req.Version >= 5 && len(known.Topics) > 0 {
		// KIP-890 part 2: the commit itself adds the group's offsets
		// partition to the transaction (no AddOffsetsToTxn). Done before
		// taking groups.mu: txns.mu comes first in the lock order.
		if t := h.rm.TopicByName(offsetsTopic); t != nil {
			part := group.PartitionFor(req.Group, int32(len(t.Partitions)))
			if code := h.AddTxnPartition(req.TransactionalID, req.ProducerID, req.ProducerEpoch, offsetsTopic, part); code != 0 {
				fail(offsetCommitCodeOfTxnCheck(code))
				return
			}
		}
	}
	g := &h.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.c == nil {
		fail(kerr.CoordinatorLoadInProgress.Code)
		return
	}
	if g.mu.cc.IsConsumerGroup(req.Group) {
		var parts []consumer.CommitPartition
		for _, t := range known.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, consumer.CommitPartition{Topic: t.Topic, TopicID: t.TopicID, Partition: p.Partition})
			}
		}
		if code := g.mu.cc.ValidateCommit(req.Group, req.MemberID, req.Generation, parts); code != 0 {
			if code == kerr.StaleMemberEpoch.Code {
				// Kafka's validateTransactionalOffsetCommit answers a
				// stale member epoch as ILLEGAL_GENERATION.
				code = kerr.IllegalGeneration.Code
			}
			fail(code)
			return
		}
		// Checked against the member epoch: store as a commit without a member.
		known.Generation, known.MemberID, known.InstanceID = -1, "", nil
	}
	resp, recs := g.mu.c.TxnOffsetCommit(h.now(), &known)
	resp.Topics = append(resp.Topics, unknown...)
	if len(recs) == 0 {
		deliver(tok, resp)
		return
	}
	part := group.PartitionFor(req.Group, int32(len(g.mu.topic.Partitions)))
	gate := newAckGate(&g.mu)
	defer gate.release()
	g.appendTxnOffsetsLocked(part, req.ProducerID, req.ProducerEpoch, recs, gate.wrap(func(err error) {
		if err != nil {
			h.log.Error("writing transactional offsets failed", "group", req.Group, "err", err)
			fail(kerr.CoordinatorNotAvailable.Code)
			return
		}
		if g.mu.pendingTxn == nil {
			g.mu.pendingTxn = map[int64][]pendingOffset{}
		}
		for _, r := range recs {
			g.mu.pendingTxn[req.ProducerID] = append(g.mu.pendingTxn[req.ProducerID], pendingOffset{part: part, group: req.Group, key: r.Key, value: r.Value})
		}
		deliver(tok, resp)
	}))
}

// appendTxnOffsetsLocked writes transactional offset commit records as one
// transactional batch of the producer to __consumer_offsets partition part,
// through the replicas' append interface; done runs with the outcome once
// the batch is acknowledged (on a single node before this returns, still
// under groups.mu).
func (g *groups) appendTxnOffsetsLocked(part int32, producerID int64, epoch int16, recs []group.Record, done func(error)) {
	batchRecs := make([]records.Record, len(recs))
	for i, r := range recs {
		batchRecs[i] = records.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	ms := g.b.now().UnixMilli()
	batch, err := records.Build(records.BatchSpec{
		Attributes: 0x10, FirstTimestamp: ms, MaxTimestamp: ms,
		ProducerID: producerID, ProducerEpoch: epoch, BaseSequence: -1,
	}, batchRecs)
	if err != nil {
		done(err)
		return
	}
	g.b.rm.AppendInternal(currentPartition(g.b.rm, g.mu.topic, part), batch, done)
}

// MarkUnstableOffsets marks the partitions of an OffsetFetch answer that
// have pending transactional offsets, or an OffsetCommit whose append is
// not acknowledged yet, UNSTABLE_OFFSET_COMMIT (require_stable), as
// Kafka's hasPendingOffsetCommitsForTopicPartition.
func (h *Host) MarkUnstableOffsets(req *kmsg.OffsetFetchRequest, r *kmsg.OffsetFetchResponse) {
	g := &h.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.mu.pendingTxn) == 0 && g.mu.c == nil {
		return
	}
	unstable := kerr.UnstableOffsetCommit.Code
	if req.Version < 8 {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if g.hasPendingTxnOffsetLocked(req.Group, r.Topics[i].Topic, r.Topics[i].Partitions[j].Partition) {
					r.Topics[i].Partitions[j].ErrorCode = unstable
				}
			}
		}
		return
	}
	for gi := range r.Groups {
		rg := &r.Groups[gi]
		for i := range rg.Topics {
			for j := range rg.Topics[i].Partitions {
				if g.hasPendingTxnOffsetLocked(rg.Group, rg.Topics[i].Topic, rg.Topics[i].Partitions[j].Partition) {
					rg.Topics[i].Partitions[j].ErrorCode = unstable
				}
			}
		}
	}
}

// offsetCommitCodeOfTxnCheck maps the answer of adding the offsets
// partition to a transaction onto what a TxnOffsetCommit may answer, as
// Kafka's group coordinator normalises its errors: "try again" answers
// (the transaction coordinator is elsewhere, moving, or still finishing
// the producer's previous transaction, whose markers are in flight in a
// cluster) become COORDINATOR_NOT_AVAILABLE, which clients retry after
// looking the coordinator up again.
func offsetCommitCodeOfTxnCheck(code int16) int16 {
	switch code {
	case kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code,
		kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	}
	return code
}
