package api

// Authorization of the topic, config and cluster admin APIs
// (authz_dispatch.go), as Kafka's KafkaApis and its ConfigHelper.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets: DESCRIBE on each topic.
func (b *API) checkListOffsets(ctx *network.RequestContext, r *kmsg.ListOffsetsRequest) checked {
	var denied []kmsg.ListOffsetsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return b.authorizedTopic(ctx, opDescribe, t.Topic) })
	return then(func(resp kmsg.Response) {
		lr, ok := resp.(*kmsg.ListOffsetsResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			lr.Topics = append(lr.Topics, rt)
		}
	})
}

// OffsetForLeaderEpoch: a follower's (a replica id, v3+) needs
// CLUSTER_ACTION, else every partition CLUSTER_AUTHORIZATION_FAILED; a
// client's needs DESCRIBE on each topic.
func (b *API) checkOffsetForLeaderEpoch(ctx *network.RequestContext, r *kmsg.OffsetForLeaderEpochRequest) checked {
	follower := r.Version >= 3 && r.ReplicaID >= 0
	clusterOK := follower && b.authorizedCluster(ctx, opClusterAction)
	var denied []kmsg.OffsetForLeaderEpochRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool {
		return clusterOK || (!follower && b.authorizedTopic(ctx, opDescribe, t.Topic))
	})
	code := kerr.TopicAuthorizationFailed.Code
	if follower {
		code = kerr.ClusterAuthorizationFailed.Code
	}
	return then(func(resp kmsg.Response) {
		or, ok := resp.(*kmsg.OffsetForLeaderEpochResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			or.Topics = append(or.Topics, rt)
		}
	})
}

// CreateTopics: CREATE on the cluster, or on each topic.
func (b *API) checkCreateTopics(ctx *network.RequestContext, r *kmsg.CreateTopicsRequest) checked {
	if b.authorizedCluster(ctx, opCreate) {
		return checked{}
	}
	var denied []kmsg.CreateTopicsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return b.authorizedTopic(ctx, opCreate, t.Topic) })
	return then(func(resp kmsg.Response) {
		cr, ok := resp.(*kmsg.CreateTopicsResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			rt.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			cr.Topics = append(cr.Topics, rt)
		}
	})
}

// DeleteTopics: DELETE on each topic (by id from v6: an unknown id is left
// to the handler).
func (b *API) checkDeleteTopics(ctx *network.RequestContext, r *kmsg.DeleteTopicsRequest) checked {
	var deniedNames []string
	var deniedTopics []kmsg.DeleteTopicsRequestTopic
	if r.Version < 6 {
		r.TopicNames, deniedNames = split(r.TopicNames, func(n string) bool { return b.authorizedTopic(ctx, opDelete, n) })
	} else {
		r.Topics, deniedTopics = split(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			} else if name = b.topicNameByID(t.TopicID); name == "" {
				return true
			}
			return b.authorizedTopic(ctx, opDelete, name)
		})
	}
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DeleteTopicsResponse)
		if !ok {
			return
		}
		add := func(name *string, id [16]byte) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
			if r.Version >= 5 {
				rt.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
			}
			dr.Topics = append(dr.Topics, rt)
		}
		for _, n := range deniedNames {
			add(kmsg.StringPtr(n), [16]byte{})
		}
		for _, t := range deniedTopics {
			add(t.Topic, t.TopicID)
		}
	})
}

// CreatePartitions: ALTER on each topic.
func (b *API) checkCreatePartitions(ctx *network.RequestContext, r *kmsg.CreatePartitionsRequest) checked {
	var denied []kmsg.CreatePartitionsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return b.authorizedTopic(ctx, opAlter, t.Topic) })
	return then(func(resp kmsg.Response) {
		cr, ok := resp.(*kmsg.CreatePartitionsResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			rt.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
			cr.Topics = append(cr.Topics, rt)
		}
	})
}

// DeleteRecords: DELETE on each topic.
func (b *API) checkDeleteRecords(ctx *network.RequestContext, r *kmsg.DeleteRecordsRequest) checked {
	var denied []kmsg.DeleteRecordsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return b.authorizedTopic(ctx, opDelete, t.Topic) })
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DeleteRecordsResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, kerr.TopicAuthorizationFailed.Code, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	})
}

// DescribeProducers: READ on each topic.
func (b *API) checkDescribeProducers(ctx *network.RequestContext, r *kmsg.DescribeProducersRequest) checked {
	var denied []kmsg.DescribeProducersRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return b.authorizedTopic(ctx, opRead, t.Topic) })
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DescribeProducersResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
				rp.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	})
}

// DescribeTopicPartitions: as Metadata, DESCRIBE on each topic: a listing
// leaves out the others, a named one is TOPIC_AUTHORIZATION_FAILED.
func (b *API) checkDescribeTopicPartitions(ctx *network.RequestContext, r *kmsg.DescribeTopicPartitionsRequest) checked {
	all := len(r.Topics) == 0
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DescribeTopicPartitionsResponse)
		if !ok {
			return
		}
		kept := dr.Topics[:0]
		for _, t := range dr.Topics {
			if t.Topic == nil || b.authorizedTopic(ctx, opDescribe, *t.Topic) {
				if t.Topic != nil && t.ErrorCode == 0 {
					t.AuthorizedOperations = b.authorizedOpsOf(ctx, true, topicOps, topicRes(*t.Topic))
				}
				kept = append(kept, t)
				continue
			}
			if all {
				continue
			}
			denied := kmsg.NewDescribeTopicPartitionsResponseTopic()
			denied.Topic, denied.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			kept = append(kept, denied)
		}
		dr.Topics = kept
	})
}

// configAllowed checks DESCRIBE_CONFIGS (or ALTER_CONFIGS) on a config
// resource as Kafka's ConfigHelper and ConfigAdminManager do: on the topic,
// the group, or the cluster for broker, broker-logger and client-metrics
// resources; it returns the refusal's error, nil when allowed (an unknown
// type is left to the handler).
func (b *API) configAllowed(ctx *network.RequestContext, typ kmsg.ConfigResourceType, name string, alter bool) *kerr.Error {
	op := opDescribeConfigs
	if alter {
		op = opAlterConfigs
	}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !b.authorizedTopic(ctx, op, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !b.authorized(ctx, op, groupRes(name)) {
			return kerr.GroupAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !b.authorizedCluster(ctx, op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}

// DescribeConfigs: DESCRIBE_CONFIGS on each resource.
func (b *API) checkDescribeConfigs(ctx *network.RequestContext, r *kmsg.DescribeConfigsRequest) checked {
	var denied []kmsg.DescribeConfigsResponseResource
	r.Resources, _ = split(r.Resources, func(res kmsg.DescribeConfigsRequestResource) bool {
		e := b.configAllowed(ctx, res.ResourceType, res.ResourceName, false)
		if e == nil {
			return true
		}
		d := kmsg.NewDescribeConfigsResponseResource()
		d.ResourceType, d.ResourceName, d.ErrorCode = res.ResourceType, res.ResourceName, e.Code
		d.ErrorMessage = kmsg.StringPtr(e.Message)
		denied = append(denied, d)
		return false
	})
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DescribeConfigsResponse)
		if !ok {
			return
		}
		dr.Resources = append(dr.Resources, denied...)
	})
}

// AlterConfigs: ALTER_CONFIGS on each resource.
func (b *API) checkAlterConfigs(ctx *network.RequestContext, r *kmsg.AlterConfigsRequest) checked {
	var denied []kmsg.AlterConfigsResponseResource
	r.Resources, _ = split(r.Resources, func(res kmsg.AlterConfigsRequestResource) bool {
		e := b.configAllowed(ctx, res.ResourceType, res.ResourceName, true)
		if e == nil {
			return true
		}
		d := kmsg.NewAlterConfigsResponseResource()
		d.ResourceType, d.ResourceName, d.ErrorCode = res.ResourceType, res.ResourceName, e.Code
		d.ErrorMessage = kmsg.StringPtr(e.Message)
		denied = append(denied, d)
		return false
	})
	return then(func(resp kmsg.Response) {
		ar, ok := resp.(*kmsg.AlterConfigsResponse)
		if !ok {
			return
		}
		ar.Resources = append(ar.Resources, denied...)
	})
}

// IncrementalAlterConfigs: ALTER_CONFIGS on each resource.
func (b *API) checkIncrementalAlterConfigs(ctx *network.RequestContext, r *kmsg.IncrementalAlterConfigsRequest) checked {
	var denied []kmsg.IncrementalAlterConfigsResponseResource
	r.Resources, _ = split(r.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) bool {
		e := b.configAllowed(ctx, res.ResourceType, res.ResourceName, true)
		if e == nil {
			return true
		}
		d := kmsg.NewIncrementalAlterConfigsResponseResource()
		d.ResourceType, d.ResourceName, d.ErrorCode = res.ResourceType, res.ResourceName, e.Code
		d.ErrorMessage = kmsg.StringPtr(e.Message)
		denied = append(denied, d)
		return false
	})
	return then(func(resp kmsg.Response) {
		ar, ok := resp.(*kmsg.IncrementalAlterConfigsResponse)
		if !ok {
			return
		}
		ar.Resources = append(ar.Resources, denied...)
	})
}

// electLeadersDenied answers ElectLeaders without ALTER on the cluster:
// the top-level code (v1+) and every partition.
func electLeadersDenied(r *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	for _, t := range r.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
			rp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// alterScramDenied answers AlterUserScramCredentials without ALTER on the
// cluster: CLUSTER_AUTHORIZATION_FAILED for every user.
func alterScramDenied(r *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = user, kerr.ClusterAuthorizationFailed.Code
		res.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		resp.Results = append(resp.Results, res)
	}
	for _, d := range r.Deletions {
		add(d.Name)
	}
	for _, u := range r.Upsertions {
		add(u.Name)
	}
	return resp
}
