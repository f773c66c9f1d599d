package api

// ShareAcknowledge v0–v2 (KIP-932; v2, Kafka 4.2's stable version, adds
// IsRenewAck and the RENEW type (KIP-1222) and AcquisitionLockTimeoutMillis).
// It shares the member's share session with ShareFetch: epoch 0 is
// INVALID_SHARE_SESSION_EPOCH (only a ShareFetch opens a session), a
// positive epoch must be the session's, and -1 applies the
// acknowledgements and closes the session, releasing what the member still
// holds in it. Acknowledgement types: 0 gap, 1 accept, 2 release,
// 3 reject, 4 renew; each partition is applied all or nothing and answered
// with its own error code.

import (
	"time"

	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleShareAcknowledge(ctx *network.RequestContext, req *kmsg.ShareAcknowledgeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member, ok := shareMemberCheck(req.GroupID, req.MemberID)
	if !ok {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if req.ShareSessionEpoch == 0 {
		resp.ErrorCode = kerr.InvalidShareSessionEpoch.Code
		return resp
	}
	renew := req.Version >= 2 && req.IsRenewAck
	var acks []coordhost.ShareAcks
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			a := coordhost.ShareAcks{TP: share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}}
			for _, ab := range rp.AcknowledgementBatches {
				a.Batches = append(a.Batches, share.AckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
			}
			acks = append(acks, a)
		}
	}
	var codes []int16
	err := b.co.Shares().Call(func(c *share.Coordinator, now time.Time) {
		resp.AcquisitionLockTimeoutMillis = c.LockDurationMs(group)
		// In a cluster the group's members are at its coordinator, not here.
		if b.cluster == nil && !c.IsShareGroup(group) {
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return
		}
		if req.ShareSessionEpoch == -1 {
			if !c.HasSession(group, member) {
				resp.ErrorCode = kerr.ShareSessionNotFound.Code
				return
			}
			codes = b.co.ApplyShareAcks(c, now, group, member, renew, acks)
			c.CloseSession(group, member)
			return
		}
		if code := c.CheckAckSession(group, member, req.ShareSessionEpoch); code != 0 {
			resp.ErrorCode = code
			return
		}
		codes = b.co.ApplyShareAcks(c, now, group, member, renew, acks)
	})
	if err != nil {
		ctx.CloseConn = true
		return nil
	}
	topics := map[[16]byte]int{}
	for i, a := range acks {
		if codes == nil {
			break
		}
		ti, ok := topics[a.TP.TopicID]
		if !ok {
			ti = len(resp.Topics)
			topics[a.TP.TopicID] = ti
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = a.TP.TopicID
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewShareAcknowledgeResponseTopicPartition()
		p.Partition = a.TP.Partition
		p.ErrorCode = codes[i]
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, p)
	}
	b.shareAckLeaderHints(ctx, resp)
	return resp
}
