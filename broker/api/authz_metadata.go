package api

// Authorization of Metadata, as Kafka's handleTopicMetadataRequest: a
// listing of all topics leaves out those the principal may not DESCRIBE;
// a topic asked for by name or id that it may not DESCRIBE is answered
// TOPIC_AUTHORIZATION_FAILED without saying whether it exists (by id: with
// a null name); auto-creation needs DESCRIBE and CREATE (on the cluster or
// the topic), else TOPIC_AUTHORIZATION_FAILED; authorizedOperations are
// the principal's.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// mayAutoCreate reports whether the principal may have Metadata create
// topic name.
func (b *API) mayAutoCreate(ctx *network.RequestContext, name string) bool {
	if b.authz == nil {
		return true
	}
	return b.authorizedTopic(ctx, opDescribe, name) &&
		(b.authorizedCluster(ctx, opCreate) || b.authorizedTopic(ctx, opCreate, name))
}

// metadataAuthzAfter applies the principal's rights to a Metadata answer.
func (b *API) metadataAuthzAfter(ctx *network.RequestContext, req *kmsg.MetadataRequest, r kmsg.Response) {
	resp, ok := r.(*kmsg.MetadataResponse)
	if b.authz == nil || !ok {
		return
	}
	resp.AuthorizedOperations = b.authorizedOpsOf(ctx, req.IncludeClusterAuthorizedOperations, clusterOps, clusterRes)
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	kept := resp.Topics[:0]
	for _, mt := range resp.Topics {
		name := ""
		if mt.Topic != nil {
			name = *mt.Topic
		} else if t, ok := b.topicWithID(mt.TopicID); ok {
			name = t.Name
		}
		if name == "" || mt.ErrorCode == kerr.TopicAuthorizationFailed.Code {
			kept = append(kept, mt) // an unknown id, or already refused
			continue
		}
		if !b.authorizedTopic(ctx, opDescribe, name) {
			if all {
				continue
			}
			denied := kmsg.NewMetadataResponseTopic()
			denied.ErrorCode = kerr.TopicAuthorizationFailed.Code
			if byName := mt.Topic != nil && !b.requestedByID(req, mt.TopicID); byName {
				denied.Topic = mt.Topic
			} else {
				denied.TopicID = mt.TopicID
			}
			kept = append(kept, denied)
			continue
		}
		mt.AuthorizedOperations = b.authorizedOpsOf(ctx, req.IncludeTopicAuthorizedOperations, topicOps, topicRes(name))
		kept = append(kept, mt)
	}
	resp.Topics = kept
}

// requestedByID reports whether the request named the topic of id by its
// id alone.
func (b *API) requestedByID(req *kmsg.MetadataRequest, id [16]byte) bool {
	for _, rt := range req.Topics {
		if rt.Topic == nil && rt.TopicID == id {
			return true
		}
	}
	return false
}
