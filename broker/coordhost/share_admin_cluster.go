package coordhost

// The share-group offsets admin of a cluster (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups of a
// share group), run by the group's coordinator against the share
// coordinators that hold each share-partition's state (share_cluster.go
// routes each call; ReadShareGroupStateSummary, InitializeShareGroupState
// and DeleteShareGroupState for the remote ones). An admin reset bumps
// the state epoch, so a leader still holding the old in-flight state has
// its next write refused (FENCED_STATE_EPOCH), drops it and reads the new
// one; this broker drops its own copy at once.

import (
	"context"
	"errors"

	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareSummary is one share-partition's persisted SPSO.
type ShareSummary struct {
	StateEpoch  int32
	StartOffset int64
	// Finished counts the finished records above StartOffset.
	Finished int64
}

// ShareStateSummaryOf returns a share-partition's persisted summary, and
// false when it has no state.
func (h *Host) ShareStateSummaryOf(ctx context.Context, group string, tp share.TopicPartition) (ShareSummary, bool, int16, error) {
	var (
		sum   ShareSummary
		found bool
	)
	code, err := retryShare(ctx, func() (int16, error) {
		broker, local, code, err := h.shareCoordinator(group, tp, false)
		if errors.Is(err, errNoStateTopic) {
			return 0, nil // no share-partition has state
		}
		if err != nil || code != 0 {
			return code, err
		}
		if local {
			var c int16
			sum.StateEpoch, sum.StartOffset, sum.Finished, found, c = h.ShareStateSummary(group, tp, -1)
			return c, nil
		}
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.GroupID = group
		rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		rt.TopicID = tp.TopicID
		rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch = tp.Partition, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := h.cluster.Send(ctx, broker, req)
		if err != nil {
			return 0, err
		}
		r, ok := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
		if !ok || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return kerr.UnknownServerError.Code, nil
		}
		p := r.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return p.ErrorCode, nil
		}
		found = p.StartOffset >= 0
		sum = ShareSummary{StateEpoch: p.StateEpoch, StartOffset: p.StartOffset}
		if p.DeliveryCompleteCount > 0 {
			sum.Finished = int64(p.DeliveryCompleteCount)
		}
		return 0, nil
	})
	return sum, found, code, err
}

// ShareResetState sets a share-partition's SPSO with a new state epoch
// (AlterShareGroupOffsets) and returns the share coordinator's code.
func (h *Host) ShareResetState(ctx context.Context, group string, tp share.TopicPartition, start int64) (int16, error) {
	sum, found, code, err := h.ShareStateSummaryOf(ctx, group, tp)
	if err != nil || code != 0 {
		return code, err
	}
	epoch := int32(0)
	if found {
		epoch = sum.StateEpoch + 1
	}
	code, err = retryShare(ctx, func() (int16, error) {
		broker, local, code, err := h.shareCoordinator(group, tp, true)
		if err != nil || code != 0 {
			return code, err
		}
		if local {
			return awaitCode(ctx, func(done func(int16)) { h.ShareStateInitialize(group, tp, epoch, start, done) })
		}
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = group
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = tp.TopicID
		rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		rp.Partition, rp.StateEpoch, rp.StartOffset = tp.Partition, epoch, start
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := h.cluster.Send(ctx, broker, req)
		if err != nil {
			return 0, err
		}
		r, ok := resp.(*kmsg.InitializeShareGroupStateResponse)
		if !ok || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return kerr.UnknownServerError.Code, nil
		}
		return r.Topics[0].Partitions[0].ErrorCode, nil
	})
	h.shares.dropLocal(group, tp)
	return code, err
}

// ShareDeleteState deletes a share-partition's persisted state.
func (h *Host) ShareDeleteState(ctx context.Context, group string, tp share.TopicPartition) (int16, error) {
	code, err := retryShare(ctx, func() (int16, error) {
		return h.sendState(ctx, share.StateRecord{Group: group, TP: tp}, -1)
	})
	h.shares.dropLocal(group, tp)
	return code, err
}

// dropLocal forgets this broker's in-flight copy of a share-partition.
func (h *ShareHost) dropLocal(group string, tp share.TopicPartition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.c != nil {
		h.mu.c.DropState(group, tp)
		h.afterLocked()
	}
}
