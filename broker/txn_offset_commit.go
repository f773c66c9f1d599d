package broker

// TxnOffsetCommit v0–v5. v2 leader epochs; v3 flexible, generation, member
// and instance ids checked like OffsetCommit; v5 (KIP-890 part 2) adds the
// group's __consumer_offsets partition to the transaction itself. The offsets are written at once
// as a transactional batch of the producer to the group's __consumer_offsets
// partition but become visible only when the transaction's commit marker is
// written there (groups.completeTxnOffsets); an abort drops them. Partitions
// that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleTxnOffsetCommit(ctx *network.RequestContext, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	fail := func(code int16) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if _, err := b.groups.ensure(); err != nil {
		b.log.Error("group coordinator unavailable", "err", err)
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	// Partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION, as in OffsetCommit.
	known := *req
	known.Topics = nil
	var unknown []kmsg.TxnOffsetCommitResponseTopic
	for _, rt := range req.Topics {
		kt, ut := rt, kmsg.NewTxnOffsetCommitResponseTopic()
		kt.Partitions, ut.Topic = nil, rt.Topic
		for _, rp := range rt.Partitions {
			if b.rm.PartitionOf(rt.Topic, rp.Partition) == nil {
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
		if t := b.rm.TopicByName(offsetsTopic); t != nil {
			part := group.PartitionFor(req.Group, int32(len(t.Partitions)))
			if code := b.addTxnPartition(req.TransactionalID, req.ProducerID, req.ProducerEpoch, offsetsTopic, part); code != 0 {
				return fail(code)
			}
		}
	}
	g := &b.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.c == nil {
		return fail(kerr.CoordinatorLoadInProgress.Code)
	}
	if g.mu.cc.IsConsumerGroup(req.Group) {
		if code := g.mu.cc.ValidateCommit(req.Group, req.MemberID, req.Generation); code != 0 {
			return fail(code)
		}
		// Checked against the member epoch: store as a commit without a member.
		known.Generation, known.MemberID, known.InstanceID = -1, "", nil
	}
	resp, recs := g.mu.c.TxnOffsetCommit(b.now(), &known)
	resp.Topics = append(resp.Topics, unknown...)
	if len(recs) == 0 {
		return resp
	}
	part := group.PartitionFor(req.Group, int32(len(g.mu.topic.Partitions)))
	batchRecs := make([]records.Record, len(recs))
	for i, r := range recs {
		batchRecs[i] = records.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	ms := b.now().UnixMilli()
	batch, err := records.Build(records.BatchSpec{
		Attributes: 0x10, FirstTimestamp: ms, MaxTimestamp: ms,
		ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, BaseSequence: -1,
	}, batchRecs)
	if err == nil {
		err = g.mu.topic.Partitions[part].AppendInternal(batch)
	}
	if err != nil {
		b.log.Error("writing transactional offsets failed", "group", req.Group, "err", err)
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	if g.mu.pendingTxn == nil {
		g.mu.pendingTxn = map[int64][]pendingOffset{}
	}
	for _, r := range recs {
		g.mu.pendingTxn[req.ProducerID] = append(g.mu.pendingTxn[req.ProducerID], pendingOffset{part: part, group: req.Group, key: r.Key, value: r.Value})
	}
	return resp
}

// handleOffsetFetch answers OffsetFetch through the coordinators, then marks
// partitions with pending transactional offsets UNSTABLE_OFFSET_COMMIT when
// the client asked for stable offsets (v7+).
func (b *Broker) handleOffsetFetch(ctx *network.RequestContext, req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := b.handleGroupRequest(ctx, req)
	r, ok := resp.(*kmsg.OffsetFetchResponse)
	if !ok || !req.RequireStable {
		return resp
	}
	g := &b.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.mu.pendingTxn) == 0 {
		return resp
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
		return r
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
	return r
}
