package api

// Authorization of Fetch, as Kafka's handleFetchRequest: a follower's fetch
// (a replica id) needs CLUSTER_ACTION on the cluster, else every partition
// fails with TOPIC_AUTHORIZATION_FAILED; a consumer's needs READ on each
// topic, and the partitions of the others fail with
// TOPIC_AUTHORIZATION_FAILED without being read. Partitions that come from
// an incremental fetch session rather than the request are checked on the
// way out (fetchAuthzAfter), so a revoked ACL also stops a session.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchDenied is what fetchAuthzBefore took out of a request.
type fetchDenied struct {
	topics []kmsg.FetchResponseTopic
	// skip: nothing authorized is left and no session is involved, so the
	// replica layer is not asked (and does not wait MaxWait for nothing).
	skip bool
}

// fetchTopicName is the name of a fetched topic (by id from v13), "" if
// the id is unknown (the replica layer answers UNKNOWN_TOPIC_ID).
func (b *API) fetchTopicName(version int16, name string, id [16]byte) string {
	if version < 13 {
		return name
	}
	if t, ok := b.topicWithID(id); ok {
		return t.Name
	}
	return ""
}

// fetchAuthzBefore removes from req the topics the principal may not read
// and returns their error answers.
func (b *API) fetchAuthzBefore(ctx *network.RequestContext, req *kmsg.FetchRequest) fetchDenied {
	var d fetchDenied
	if b.authz == nil {
		return d
	}
	follower := fetchReplicaID(req) >= 0
	clusterOK := follower && b.authorizedCluster(ctx, opClusterAction)
	kept := req.Topics[:0:0]
	for _, rt := range req.Topics {
		name := b.fetchTopicName(req.Version, rt.Topic, rt.TopicID)
		allowed := clusterOK || (!follower && (name == "" || b.authorizedTopic(ctx, opRead, name)))
		if allowed {
			kept = append(kept, rt)
			continue
		}
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			st.Partitions = append(st.Partitions, deniedFetchPartition(rp.Partition))
		}
		d.topics = append(d.topics, st)
	}
	if len(d.topics) > 0 && len(kept) == 0 && req.SessionEpoch <= 0 && req.SessionID == 0 {
		d.skip = true
	}
	req.Topics = kept
	return d
}

func deniedFetchPartition(p int32) kmsg.FetchResponseTopicPartition {
	sp := kmsg.NewFetchResponseTopicPartition()
	sp.Partition, sp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
	return sp
}

// fetchAuthzAfter adds the denied topics to resp and blanks any partition
// of a topic the principal may not read that a fetch session added.
func (b *API) fetchAuthzAfter(ctx *network.RequestContext, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, d fetchDenied) {
	if b.authz == nil {
		return
	}
	if fetchReplicaID(req) < 0 {
		for i := range resp.Topics {
			rt := &resp.Topics[i]
			name := b.fetchTopicName(req.Version, rt.Topic, rt.TopicID)
			if name == "" || b.authorizedTopic(ctx, opRead, name) {
				continue
			}
			for j := range rt.Partitions {
				rt.Partitions[j] = deniedFetchPartition(rt.Partitions[j].Partition)
			}
		}
	}
	resp.Topics = append(resp.Topics, d.topics...)
}

// fetchReplicaID is the broker id a Fetch comes from (ReplicaState.ID from
// v15), negative for consumers.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}
