package api

// Authorization of the group APIs (authz_dispatch.go), as Kafka's KafkaApis.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups: DESCRIBE on each group, GROUP_AUTHORIZATION_FAILED for
// the others; authorized operations are the principal's.
func (b *API) checkDescribeGroups(ctx *network.RequestContext, r *kmsg.DescribeGroupsRequest) checked {
	var denied []string
	r.Groups, denied = split(r.Groups, func(g string) bool { return b.authorized(ctx, opDescribe, groupRes(g)) })
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DescribeGroupsResponse)
		if !ok {
			return
		}
		for i := range dr.Groups {
			g := &dr.Groups[i]
			g.AuthorizedOperations = b.authorizedOpsOf(ctx, r.IncludeAuthorizedOperations, groupOps, groupRes(g.Group))
		}
		for _, g := range denied {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			dg.AuthorizedOperations = authzOmitted
			dr.Groups = append(dr.Groups, dg)
		}
	})
}

// ConsumerGroupDescribe: as DescribeGroups.
func (b *API) checkConsumerGroupDescribe(ctx *network.RequestContext, r *kmsg.ConsumerGroupDescribeRequest) checked {
	var denied []string
	r.Groups, denied = split(r.Groups, func(g string) bool { return b.authorized(ctx, opDescribe, groupRes(g)) })
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.ConsumerGroupDescribeResponse)
		if !ok {
			return
		}
		for i := range dr.Groups {
			g := &dr.Groups[i]
			g.AuthorizedOperations = b.authorizedOpsOf(ctx, r.IncludeAuthorizedOperations, groupOps, groupRes(g.Group))
		}
		for _, g := range denied {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			dg.ErrorMessage = kmsg.StringPtr(kerr.GroupAuthorizationFailed.Message)
			dg.AuthorizedOperations = authzOmitted
			dr.Groups = append(dr.Groups, dg)
		}
	})
}

// ListGroups: DESCRIBE on the cluster lists every group, else the groups
// the principal may DESCRIBE.
func (b *API) checkListGroups(ctx *network.RequestContext) checked {
	if b.authorizedCluster(ctx, opDescribe) {
		return checked{}
	}
	return then(func(resp kmsg.Response) {
		lr, ok := resp.(*kmsg.ListGroupsResponse)
		if !ok {
			return
		}
		lr.Groups, _ = split(lr.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return b.authorized(ctx, opDescribe, groupRes(g.Group))
		})
	})
}

// DeleteGroups: DELETE on each group.
func (b *API) checkDeleteGroups(ctx *network.RequestContext, r *kmsg.DeleteGroupsRequest) checked {
	var denied []string
	r.Groups, denied = split(r.Groups, func(g string) bool { return b.authorized(ctx, opDelete, groupRes(g)) })
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DeleteGroupsResponse)
		if !ok {
			return
		}
		for _, g := range denied {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			if r.Version >= 3 {
				dg.ErrorMessage = kmsg.StringPtr(kerr.GroupAuthorizationFailed.Message)
			}
			dr.Groups = append(dr.Groups, dg)
		}
	})
}

// OffsetDelete: DELETE on the group, READ on each topic.
func (b *API) checkOffsetDelete(ctx *network.RequestContext, r *kmsg.OffsetDeleteRequest) checked {
	if c := b.needGroup(ctx, r, opDelete, r.Group); c.resp != nil {
		return c
	}
	var denied []kmsg.OffsetDeleteRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return b.authorizedTopic(ctx, opRead, t.Topic) })
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.OffsetDeleteResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	})
}

// FindCoordinator: DESCRIBE on the group (for a share key, the group part
// of "group:topicId:partition") or on the transactional id.
func (b *API) checkFindCoordinator(ctx *network.RequestContext, r *kmsg.FindCoordinatorRequest) checked {
	keyOK := func(key string) *kerr.Error {
		switch r.CoordinatorType {
		case 1:
			if !b.authorized(ctx, opDescribe, txnRes(key)) {
				return kerr.TransactionalIDAuthorizationFailed
			}
		case 2:
			group := key
			if i := lastColon(key, 2); i >= 0 {
				group = key[:i]
			}
			if !b.authorized(ctx, opDescribe, groupRes(group)) {
				return kerr.GroupAuthorizationFailed
			}
		default:
			if !b.authorized(ctx, opDescribe, groupRes(key)) {
				return kerr.GroupAuthorizationFailed
			}
		}
		return nil
	}
	if r.Version < 4 {
		if e := keyOK(r.CoordinatorKey); e != nil {
			resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
			resp.ErrorCode, resp.NodeID, resp.Port = e.Code, -1, -1
			if r.Version >= 1 {
				resp.ErrorMessage = kmsg.StringPtr(e.Message)
			}
			return deny(resp)
		}
		return checked{}
	}
	var denied []kmsg.FindCoordinatorResponseCoordinator
	r.CoordinatorKeys, _ = split(r.CoordinatorKeys, func(k string) bool {
		if e := keyOK(k); e != nil {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, e.Code
			c.ErrorMessage = kmsg.StringPtr(e.Message)
			denied = append(denied, c)
			return false
		}
		return true
	})
	return then(func(resp kmsg.Response) {
		fr, ok := resp.(*kmsg.FindCoordinatorResponse)
		if !ok {
			return
		}
		fr.Coordinators = append(fr.Coordinators, denied...)
	})
}

// lastColon is the index of the n-th colon from the end of s, -1 if there
// are fewer.
func lastColon(s string, n int) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

// OffsetCommit: READ on the group (else every partition fails with
// GROUP_AUTHORIZATION_FAILED), READ on each topic.
func (b *API) checkOffsetCommit(ctx *network.RequestContext, r *kmsg.OffsetCommitRequest) checked {
	groupOK := b.authorized(ctx, opRead, groupRes(r.Group))
	var denied []kmsg.OffsetCommitRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool {
		if !groupOK {
			return false
		}
		name := t.Topic
		if r.Version >= 10 {
			if name = b.topicNameByID(t.TopicID); name == "" {
				return true // the handler answers UNKNOWN_TOPIC_ID
			}
		}
		return b.authorizedTopic(ctx, opRead, name)
	})
	answer := func(resp *kmsg.OffsetCommitResponse) {
		for _, t := range denied {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			code := kerr.TopicAuthorizationFailed.Code
			if !groupOK {
				code = kerr.GroupAuthorizationFailed.Code
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if !groupOK {
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		answer(resp)
		return deny(resp)
	}
	return then(func(resp kmsg.Response) {
		if cr, ok := resp.(*kmsg.OffsetCommitResponse); ok {
			answer(cr)
		}
	})
}

// topicNameByID is the name of the topic with id, "" if unknown.
func (b *API) topicNameByID(id [16]byte) string {
	if t, ok := b.topicWithID(id); ok {
		return t.Name
	}
	return ""
}

// OffsetFetch: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), DESCRIBE
// on each topic asked for (TOPIC_AUTHORIZATION_FAILED per partition); a
// fetch of all topics leaves out those the principal may not describe.
func (b *API) checkOffsetFetch(ctx *network.RequestContext, r *kmsg.OffsetFetchRequest) checked {
	if r.Version < 8 {
		if !b.authorized(ctx, opDescribe, groupRes(r.Group)) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			for _, t := range r.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.GroupAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return deny(resp)
		}
		var denied []kmsg.OffsetFetchRequestTopic
		all := r.Topics == nil
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return b.authorizedTopic(ctx, opDescribe, t.Topic) })
		if all {
			r.Topics = nil // split turns nil into an empty list
		} else if r.Topics == nil {
			r.Topics = []kmsg.OffsetFetchRequestTopic{}
		}
		return then(func(resp kmsg.Response) {
			fr, ok := resp.(*kmsg.OffsetFetchResponse)
			if !ok {
				return
			}
			fr.Topics, _ = split(fr.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return b.authorizedTopic(ctx, opDescribe, t.Topic) })
			for _, t := range denied {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				fr.Topics = append(fr.Topics, rt)
			}
		})
	}
	var deniedGroups []string
	deniedTopics := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	r.Groups, _ = split(r.Groups, func(g kmsg.OffsetFetchRequestGroup) bool {
		if !b.authorized(ctx, opDescribe, groupRes(g.Group)) {
			deniedGroups = append(deniedGroups, g.Group)
			return false
		}
		return true
	})
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Topics == nil {
			continue
		}
		kept, denied := split(g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) bool {
			name := t.Topic
			if r.Version >= 10 {
				if name = b.topicNameByID(t.TopicID); name == "" {
					return true
				}
			}
			return b.authorizedTopic(ctx, opDescribe, name)
		})
		if kept == nil {
			kept = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		g.Topics = kept
		deniedTopics[g.Group] = denied
	}
	return then(func(resp kmsg.Response) {
		fr, ok := resp.(*kmsg.OffsetFetchResponse)
		if !ok {
			return
		}
		for i := range fr.Groups {
			g := &fr.Groups[i]
			g.Topics, _ = split(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
				name := t.Topic
				if r.Version >= 10 {
					if name = b.topicNameByID(t.TopicID); name == "" {
						return true
					}
				}
				return b.authorizedTopic(ctx, opDescribe, name)
			})
			for _, t := range deniedTopics[g.Group] {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
		}
		for _, g := range deniedGroups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			fr.Groups = append(fr.Groups, rg)
		}
	})
}
