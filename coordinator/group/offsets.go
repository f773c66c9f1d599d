package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit handles OffsetCommit v0-v9. Versions: v1 adds generation,
// member id and a per-partition commit timestamp, v2-v4 carry a retention
// time (an explicit expiration), v6 adds the leader epoch, v7
// group.instance.id. Generation -1 with no member id is a commit by a
// non-group ("simple") consumer, allowed only while the group is Empty; it
// creates the group if needed. Each accepted partition yields one Record;
// its offset stays pending, invisible to OffsetFetch, until Appended.
// The caller must already have answered UNKNOWN_TOPIC_OR_PARTITION or
// authorization errors for partitions it filtered out.
func (c *Coordinator) OffsetCommit(now time.Time, token any, req *kmsg.OffsetCommitRequest) ([]Reply, []Record) {
	c.begin(now)
	var o out
	v := req.Version
	generation, memberID := int32(-1), ""
	if v >= 1 {
		generation, memberID = req.Generation, req.MemberID
	}
	var instanceID *string
	if v >= 7 {
		instanceID = req.InstanceID
	}
	g := c.groups[req.Group]
	var code int16
	if g == nil {
		if generation < 0 {
			g = newGroup(req.Group, now.UnixMilli())
			c.groups[req.Group] = g
		} else if v >= 9 {
			// Kafka's rule since OffsetCommit v9 (KIP-848): a
			// member commit to a group that does not exist is
			// GROUP_ID_NOT_FOUND, for both group protocols.
			code = kerr.GroupIDNotFound.Code
		} else {
			// A commit from a generation this coordinator never
			// saw; older versions keep ILLEGAL_GENERATION.
			code = kerr.IllegalGeneration.Code
		}
	}
	if code == 0 {
		code = c.validateCommit(g, generation, memberID, instanceID)
	}
	if code == 0 && g.state == CompletingRebalance {
		// The member knows the new generation from its JoinGroup answer
		// but has no assignment yet.
		code = kerr.RebalanceInProgress.Code
	}
	if code == 0 {
		if m := g.members[memberID]; m != nil {
			m.deadline = now.Add(ms(m.sessionTimeoutMs))
		}
	}
	nowMs := now.UnixMilli()
	expireMs := int64(-1)
	if v >= 2 && v <= 4 && req.RetentionTimeMillis != -1 {
		expireMs = nowMs + req.RetentionTimeMillis
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = v
	var w *write
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			var off *offset
			off, rp.ErrorCode = c.newOffset(code, p.Offset, p.Metadata, nowMs, expireMs)
			if rp.ErrorCode == 0 {
				if v == 1 && p.Timestamp != -1 {
					off.commitMs = p.Timestamp
				}
				if v >= 6 {
					off.leaderEpoch = p.LeaderEpoch
				}
				if w == nil {
					w = c.newWrite(g)
				}
				off.seq = w.seq
				g.stage(t.Topic, p.Partition, off)
				w.offsets = append(w.offsets, stagedOffset{t.Topic, p.Partition, off})
				rec := offsetRecord(g.id, t.Topic, p.Partition, off)
				rec.w = w
				o.records = append(o.records, rec)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if g != nil {
		c.maybeForget(g)
	}
	o.reply(token, resp)
	return o.replies, o.records
}

// newOffset is the offset a commit stores, or the error code of the
// partition: code when the commit as a whole failed, else
// OFFSET_METADATA_TOO_LARGE past offset.metadata.max.bytes.
func (c *Coordinator) newOffset(code int16, committed int64, metadata *string, nowMs, expireMs int64) (*offset, int16) {
	if code != 0 {
		return nil, code
	}
	meta := ""
	if metadata != nil {
		meta = *metadata
	}
	if len(meta) > int(c.cfg.OffsetMetadataMaxBytes) {
		return nil, kerr.OffsetMetadataTooLarge.Code
	}
	return &offset{offset: committed, leaderEpoch: -1, metadata: meta, commitMs: nowMs, expireMs: expireMs}, 0
}

// validateCommit is Kafka's validateOffsetCommit.
func (c *Coordinator) validateCommit(g *group, generation int32, memberID string, instanceID *string) int16 {
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable.Code
	case generation < 0 && g.state == Empty:
		// Admin clients and consumers without group management.
		return 0
	case generation >= 0 || memberID != "" || instanceID != nil:
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	case g.state != Empty:
		// Only members may commit for a group that has members.
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// offsetMap holds offsets by topic, then partition; a topic without
// partitions is not kept.
type offsetMap map[string]map[int32]*offset

// put sets the offset of the partition.
func (m offsetMap) put(topic string, partition int32, off *offset) {
	ps := m[topic]
	if ps == nil {
		ps = make(map[int32]*offset)
		m[topic] = ps
	}
	ps[partition] = off
}

// remove forgets the offset of the partition and reports whether it had one.
func (m offsetMap) remove(topic string, partition int32) bool {
	ps := m[topic]
	if _, ok := ps[partition]; !ok {
		return false
	}
	delete(ps, partition)
	if len(ps) == 0 {
		delete(m, topic)
	}
	return true
}

func (g *group) setOffset(topic string, partition int32, off *offset) {
	g.offsets.put(topic, partition, off)
}

// stage makes off the pending commit of the partition.
func (g *group) stage(topic string, partition int32, off *offset) {
	g.pendingOffsets.put(topic, partition, off)
}

// unstage forgets the pending commit of the partition.
func (g *group) unstage(topic string, partition int32) {
	g.pendingOffsets.remove(topic, partition)
}

// deleteOffset removes the committed offset of the partition, and its
// pending commit, which will then not apply (Kafka's removeOffsets). It
// reports whether a committed offset was removed.
func (g *group) deleteOffset(topic string, partition int32) bool {
	g.unstage(topic, partition)
	return g.offsets.remove(topic, partition)
}

// OffsetFetch handles OffsetFetch v0-v9. v2 allows null topics (all
// committed offsets) and adds a top-level error, v5 the leader epoch, v7
// require_stable, v8 batches groups, v9 adds the member id and epoch, which
// classic groups ignore. Partitions without a committed offset answer -1.
// Offsets whose commit is not acknowledged yet are not answered; the
// caller answers UNSTABLE_OFFSET_COMMIT for require_stable
// (HasPendingOffset).
func (c *Coordinator) OffsetFetch(now time.Time, token any, req *kmsg.OffsetFetchRequest) ([]Reply, []Record) {
	c.begin(now)
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []topicRequest
			if rg.Topics != nil {
				topics = make([]topicRequest, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					topics = append(topics, topicRequest{t.Topic, t.Partitions})
				}
			}
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			for _, ft := range c.fetchOffsets(rg.Group, topics) {
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic = ft.topic
				for _, fp := range ft.partitions {
					p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = fp.partition, fp.offset, fp.leaderEpoch, &fp.metadata
					t.Partitions = append(t.Partitions, p)
				}
				g.Topics = append(g.Topics, t)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return []Reply{{Token: token, Resp: resp}}, nil
	}
	var topics []topicRequest
	if req.Topics != nil {
		topics = make([]topicRequest, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, topicRequest{t.Topic, t.Partitions})
		}
	}
	for _, ft := range c.fetchOffsets(req.Group, topics) {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = ft.topic
		for _, fp := range ft.partitions {
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = fp.partition, fp.offset, fp.leaderEpoch, &fp.metadata
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return []Reply{{Token: token, Resp: resp}}, nil
}

type topicRequest struct {
	topic      string
	partitions []int32
}

type fetchedTopic struct {
	topic      string
	partitions []fetchedPartition
}

type fetchedPartition struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    string
}

// fetchOffsets returns the committed offsets of group for topics, or all of
// them (sorted) when topics is nil.
func (c *Coordinator) fetchOffsets(groupID string, topics []topicRequest) []fetchedTopic {
	g := c.groups[groupID]
	if g != nil && g.state == Dead {
		g = nil
	}
	if topics == nil {
		if g == nil {
			return nil
		}
		for _, t := range sortedKeys(g.offsets) {
			topics = append(topics, topicRequest{t, sortedPartitions(g.offsets[t])})
		}
	}
	out := make([]fetchedTopic, 0, len(topics))
	for _, t := range topics {
		ft := fetchedTopic{topic: t.topic}
		for _, p := range t.partitions {
			fp := fetchedPartition{partition: p, offset: -1, leaderEpoch: -1}
			if g != nil {
				if off := g.offsets[t.topic][p]; off != nil {
					fp.offset, fp.leaderEpoch, fp.metadata = off.offset, off.leaderEpoch, off.metadata
				}
			}
			ft.partitions = append(ft.partitions, fp)
		}
		out = append(out, ft)
	}
	return out
}

// OffsetDelete handles OffsetDelete v0 (KIP-496): committed offsets of an
// Empty group are deleted; a consumer group with members keeps the offsets
// of topics it subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); any other group
// with members refuses with NON_EMPTY_GROUP. Deletions yield tombstones.
func (c *Coordinator) OffsetDelete(now time.Time, token any, req *kmsg.OffsetDeleteRequest) ([]Reply, []Record) {
	c.begin(now)
	var o out
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	g := c.groups[req.Group]
	switch {
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
	case g == nil || g.state == Dead:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
	case g.state != Empty && g.protocolType != consumerProtocolType:
		resp.ErrorCode = kerr.NonEmptyGroup.Code
	}
	if resp.ErrorCode != 0 {
		o.reply(token, resp)
		return o.replies, o.records
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		subscribed := g.state != Empty && g.isSubscribed(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if subscribed {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if g.deleteOffset(t.Topic, p.Partition) {
				o.records = append(o.records, offsetTombstone(g.id, t.Topic, p.Partition))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	o.reply(token, resp)
	return o.replies, o.records
}

// expireOffsets removes offsets whose retention passed (KIP-211) and then
// groups left Empty with no offsets, yielding tombstones for both.
//
// Offsets with an explicit expiration (v1 values) expire at it. Otherwise
// an Empty group's offsets expire OffsetsRetentionMs after the group became
// Empty; a Stable consumer group's offsets of topics it no longer
// subscribes to, and a simple group's offsets, OffsetsRetentionMs after
// their commit. Groups in a rebalance keep everything.
func (c *Coordinator) expireOffsets(o *out, now time.Time) {
	nowMs := now.UnixMilli()
	retention := c.cfg.OffsetsRetentionMs
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		var base func(*offset) int64
		var keep func(topic string) bool
		switch {
		case g.protocolType != "" && g.state == Empty:
			base = func(off *offset) int64 {
				if g.stateMs >= 0 {
					return g.stateMs
				}
				return off.commitMs
			}
		case g.protocolType == consumerProtocolType && g.subscribedKnown && g.state == Stable:
			base = func(off *offset) int64 { return off.commitMs }
			keep = g.isSubscribed
		case g.protocolType == "":
			base = func(off *offset) int64 { return off.commitMs }
		}
		if base != nil {
			for _, t := range sortedKeys(g.offsets) {
				if keep != nil && keep(t) {
					continue
				}
				ps := g.offsets[t]
				for _, p := range sortedPartitions(ps) {
					off := ps[p]
					if g.pendingOffsets[t][p] != nil {
						continue // a newer commit is being written
					}
					expired := nowMs-base(off) >= retention
					if off.expireMs >= 0 {
						expired = nowMs >= off.expireMs
					}
					if expired {
						g.deleteOffset(t, p)
						o.records = append(o.records, offsetTombstone(g.id, t, p))
					}
				}
			}
		}
		if g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && len(g.pendingOffsets) == 0 {
			g.transition(Dead, now)
			delete(c.groups, id)
			if g.generation > 0 || g.metadataStored {
				// Offsets-only groups never wrote group metadata.
				o.records = append(o.records, groupTombstone(g.id))
			}
		}
	}
}
