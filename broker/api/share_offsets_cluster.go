package api

// The share-group offsets admin APIs and the share groups of ListGroups and
// DeleteGroups in a cluster: answered by the group's coordinator (others
// answer NOT_COORDINATOR, or leave the group out of ListGroups), with the
// share-partition state at the share coordinators
// (coordhost/share_admin_cluster.go). A group has state for the
// partitions its share coordinators hold: "every partition" (null Topics
// of DescribeShareGroupOffsets, DeleteGroups) asks about every partition
// of every topic, since kbroker's coordinator does not record which
// share-partitions were initialized (Kafka keeps that in
// __consumer_offsets).

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareAdminTimeout bounds one admin request's state round trips.
const shareAdminTimeout = 30 * time.Second

func (b *API) coordinatesGroup(group string) bool {
	return b.coordinates("__consumer_offsets", group)
}

// shareAdminContext is the context of one admin request, ended by shutdown.
func (b *API) shareAdminContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), shareAdminTimeout)
	go func() {
		select {
		case <-b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// allSharePartitions are the partitions of every topic share groups may consume.
func (b *API) allSharePartitions() []share.TopicPartition {
	var out []share.TopicPartition
	for _, name := range b.topicNames() {
		t, ok := b.topicNamed(name)
		if !ok || replica.IsInternal(name) {
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, share.TopicPartition{TopicID: t.ID, Partition: p})
		}
	}
	return out
}

func (b *API) describeShareGroupOffsetsCluster(req *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	ctx, cancel := b.shareAdminContext()
	defer cancel()
	for _, rg := range req.Groups {
		if !b.coordinatesGroup(rg.GroupID) {
			g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID, g.ErrorCode = rg.GroupID, kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		var candidates []share.TopicPartition
		if rg.Topics == nil {
			candidates = b.allSharePartitions()
		}
		resp.Groups = append(resp.Groups, b.shareOffsetsGroup(rg, candidates, func(tp share.TopicPartition) (shareOffset, bool, int16) {
			sum, found, code, err := b.co.ShareStateSummaryOf(ctx, rg.GroupID, tp)
			if err != nil && code == 0 {
				code = kerr.CoordinatorNotAvailable.Code
			}
			return shareOffset{sum.StartOffset, sum.Finished}, found, code
		}))
	}
	return resp
}

// shareAdminCheck is the group check of AlterShareGroupOffsets
// (mustExist false: an empty group is created) and DeleteShareGroupOffsets
// (mustExist true): NOT_COORDINATOR elsewhere than at the group's
// coordinator, else the code of share.Coordinator.CanAlterOffsets. ok is
// false when the share host failed and the connection is to be closed.
func (b *API) shareAdminCheck(ctx *network.RequestContext, group string, mustExist bool) (code int16, ok bool) {
	if !b.coordinatesGroup(group) {
		return kerr.NotCoordinator.Code, true
	}
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) {
		if code = c.CanAlterOffsets(group, mustExist); code == 0 && !mustExist {
			c.EnsureGroup(group)
		}
	})
	if err != nil {
		ctx.CloseConn = true
		return 0, false
	}
	return code, true
}

func (b *API) alterShareGroupOffsetsCluster(ctx *network.RequestContext, req *kmsg.AlterShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	var ok bool
	if resp.ErrorCode, ok = b.shareAdminCheck(ctx, req.GroupID, false); !ok {
		return nil
	}
	if resp.ErrorCode != 0 {
		return resp
	}
	actx, cancel := b.shareAdminContext()
	defer cancel()
	resp.Topics = b.alterShareOffsetsTopics(req, func(tp share.TopicPartition, start int64) int16 {
		code, err := b.co.ShareResetState(actx, req.GroupID, tp, start)
		if err != nil && code == 0 {
			code = kerr.CoordinatorNotAvailable.Code
		}
		return code
	})
	return resp
}

func (b *API) deleteShareGroupOffsetsCluster(ctx *network.RequestContext, req *kmsg.DeleteShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	var ok bool
	if resp.ErrorCode, ok = b.shareAdminCheck(ctx, req.GroupID, true); !ok {
		return nil
	}
	if resp.ErrorCode != 0 {
		return resp
	}
	actx, cancel := b.shareAdminContext()
	defer cancel()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, ok := b.topicNamed(rt.Topic)
		if !ok {
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		for _, p := range t.Partitions {
			code, err := b.co.ShareDeleteState(actx, req.GroupID, share.TopicPartition{TopicID: t.ID, Partition: p})
			if err != nil && code == 0 {
				code = kerr.CoordinatorNotAvailable.Code
			}
			if st.ErrorCode == 0 {
				st.ErrorCode = code
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// deleteShareStatesCluster deletes a deleted share group's state at every
// share coordinator.
func (b *API) deleteShareStatesCluster(group string) {
	ctx, cancel := b.shareAdminContext()
	defer cancel()
	for _, tp := range b.allSharePartitions() {
		if code, err := b.co.ShareDeleteState(ctx, group, tp); code != 0 || err != nil {
			b.log.Warn("deleting share-partition state of a deleted group failed", "group", group, "key", share.CoordinatorKey(group, tp), "code", code, "err", err)
		}
	}
}
