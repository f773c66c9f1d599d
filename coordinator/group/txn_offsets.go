package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnOffsetCommit checks a transactional offset commit (v0–v4) and returns
// its answer and the offset records to write. The offsets are not applied:
// the caller writes the records as a transactional batch of the producer to
// the group's __consumer_offsets partition, and Replays them when the
// transaction's commit marker is written (they are dropped on abort), as
// Kafka's pending transactional offsets become visible only at commit.
//
// From v3 a commit that names a member is checked against the group's
// generation like OffsetCommit (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID); one without a member is accepted as Kafka accepts it.
func (c *Coordinator) TxnOffsetCommit(now time.Time, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, []Record) {
	c.begin(now)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var code int16
	if req.Version >= 3 && req.MemberID != "" {
		if g := c.groups[req.Group]; g == nil {
			code = kerr.IllegalGeneration.Code
		} else {
			code = c.validateCommit(g, req.Generation, req.MemberID, req.InstanceID)
		}
	}
	nowMs := now.UnixMilli()
	var recs []Record
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			var off *offset
			off, rp.ErrorCode = c.newOffset(code, p.Offset, p.Metadata, nowMs, -1)
			if rp.ErrorCode == 0 {
				if req.Version >= 2 {
					off.leaderEpoch = p.LeaderEpoch
				}
				recs = append(recs, offsetRecord(req.Group, t.Topic, p.Partition, off))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, recs
}
