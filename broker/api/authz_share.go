package api

// Authorization of the KIP-932 share-group APIs and of the client-quota
// APIs (authz_dispatch.go), as Kafka's KafkaApis.

import (
	"strings"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareFetch: READ on the group (top-level GROUP_AUTHORIZATION_FAILED),
// READ on each topic: the partitions of the others fail with
// TOPIC_AUTHORIZATION_FAILED and acquire nothing; partitions a share
// session adds are blanked on the way out.
func (b *API) checkShareFetch(ctx *network.RequestContext, r *kmsg.ShareFetchRequest) checked {
	if r.GroupID != nil {
		if c := b.needGroup(ctx, r, opRead, *r.GroupID); c.resp != nil {
			return c
		}
	}
	var denied []kmsg.ShareFetchRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.ShareFetchRequestTopic) bool { return b.readableTopicID(ctx, t.TopicID) })
	return then(func(resp kmsg.Response) {
		fr, ok := resp.(*kmsg.ShareFetchResponse)
		if !ok {
			return
		}
		for i := range fr.Topics {
			t := &fr.Topics[i]
			if !b.readableTopicID(ctx, t.TopicID) {
				for j := range t.Partitions {
					t.Partitions[j] = deniedSharePartition(t.Partitions[j].Partition)
				}
			}
		}
		for _, t := range denied {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, deniedSharePartition(p.Partition))
			}
			fr.Topics = append(fr.Topics, rt)
		}
	})
}

func deniedSharePartition(p int32) kmsg.ShareFetchResponseTopicPartition {
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition, sp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
	sp.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
	return sp
}

// readableTopicID reports READ on the topic with id; an unknown id is left
// to the handler (UNKNOWN_TOPIC_ID).
func (b *API) readableTopicID(ctx *network.RequestContext, id [16]byte) bool {
	name := b.topicNameByID(id)
	return name == "" || b.authorizedTopic(ctx, opRead, name)
}

// ShareAcknowledge: READ on the group and on each topic.
func (b *API) checkShareAcknowledge(ctx *network.RequestContext, r *kmsg.ShareAcknowledgeRequest) checked {
	if r.GroupID != nil {
		if c := b.needGroup(ctx, r, opRead, *r.GroupID); c.resp != nil {
			return c
		}
	}
	var denied []kmsg.ShareAcknowledgeRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.ShareAcknowledgeRequestTopic) bool { return b.readableTopicID(ctx, t.TopicID) })
	return then(func(resp kmsg.Response) {
		ar, ok := resp.(*kmsg.ShareAcknowledgeResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			ar.Topics = append(ar.Topics, rt)
		}
	})
}

// ShareGroupDescribe: DESCRIBE on each group; authorized operations are
// the principal's.
func (b *API) checkShareGroupDescribe(ctx *network.RequestContext, r *kmsg.ShareGroupDescribeRequest) checked {
	var denied []string
	r.GroupIDs, denied = split(r.GroupIDs, func(g string) bool { return b.authorized(ctx, opDescribe, groupRes(g)) })
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.ShareGroupDescribeResponse)
		if !ok {
			return
		}
		for i := range dr.Groups {
			g := &dr.Groups[i]
			g.AuthorizedOperations = b.authorizedOpsOf(ctx, r.IncludeAuthorizedOperations, groupOps, groupRes(g.GroupID))
		}
		for _, g := range denied {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			dg.ErrorMessage = kmsg.StringPtr(kerr.GroupAuthorizationFailed.Message)
			dg.AuthorizedOperations = authzOmitted
			dr.Groups = append(dr.Groups, dg)
		}
	})
}

// DescribeShareGroupOffsets: DESCRIBE on each group; the topics the
// principal may not DESCRIBE are left out.
func (b *API) checkDescribeShareGroupOffsets(ctx *network.RequestContext, r *kmsg.DescribeShareGroupOffsetsRequest) checked {
	var denied []kmsg.DescribeShareGroupOffsetsRequestGroup
	r.Groups, denied = split(r.Groups, func(g kmsg.DescribeShareGroupOffsetsRequestGroup) bool {
		return b.authorized(ctx, opDescribe, groupRes(g.GroupID))
	})
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DescribeShareGroupOffsetsResponse)
		if !ok {
			return
		}
		for i := range dr.Groups {
			g := &dr.Groups[i]
			g.Topics, _ = split(g.Topics, func(t kmsg.DescribeShareGroupOffsetsResponseGroupTopic) bool {
				return b.authorizedTopic(ctx, opDescribe, t.Topic)
			})
		}
		for _, g := range denied {
			dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			dg.GroupID, dg.ErrorCode = g.GroupID, kerr.GroupAuthorizationFailed.Code
			dg.ErrorMessage = kmsg.StringPtr(kerr.GroupAuthorizationFailed.Message)
			dr.Groups = append(dr.Groups, dg)
		}
	})
}

// alterClientQuotasDenied answers AlterClientQuotas without ALTER_CONFIGS
// on the cluster: CLUSTER_AUTHORIZATION_FAILED for every entry.
func alterClientQuotasDenied(r *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range r.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		re.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		for _, ent := range e.Entity {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

// ConsumerGroupHeartbeat: READ on the group, and DESCRIBE on every topic
// it subscribes to by name (Kafka 4's check), else
// TOPIC_AUTHORIZATION_FAILED naming them.
func (b *API) checkConsumerGroupHeartbeat(ctx *network.RequestContext, r *kmsg.ConsumerGroupHeartbeatRequest) checked {
	if c := b.needGroup(ctx, r, opRead, r.Group); c.resp != nil {
		return c
	}
	var denied []string
	for _, t := range r.SubscribedTopicNames {
		if !b.authorizedTopic(ctx, opDescribe, t) {
			denied = append(denied, t)
		}
	}
	if len(denied) == 0 {
		return checked{}
	}
	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
	resp.ErrorMessage = kmsg.StringPtr("The following topics are not authorized: " + strings.Join(denied, ", "))
	return deny(resp)
}
