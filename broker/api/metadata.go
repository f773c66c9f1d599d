package api

// Metadata v0–v12. v1 added null topics (= all), IsInternal, ControllerID;
// v2 ClusterID; v4 AllowAutoTopicCreation (before v4 auto-creation follows the
// broker config alone); v5 OfflineReplicas; v7 LeaderEpoch; v8 authorized
// operations; v9 flexible; v10 topic ids; v11 dropped cluster authorized
// operations; v12 allows lookup by topic id with a null name; v13 a
// top-level ErrorCode (KIP-1102), which Kafka sets only to ask a client to
// rebootstrap and kbroker never does.
//
// Auto-creation (auto.create.topics.enable, and from v4 the request's
// AllowAutoTopicCreation) answers a topic it creates with
// LEADER_NOT_AVAILABLE and no partitions, as Kafka does: clients retry, and
// the next request sees the partitions.

import (
	"net"
	"os"
	"sort"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endpointsFor is the broker list a metadata answer carries: this node at
// the advertised listener named like the listener the request came in on, as
// Kafka answers with the endpoints of the request's listener (the listener
// itself when advertised.listeners leaves it out; the first advertised
// listener when there is no connection).
func (b *API) endpointsFor(ctx *network.RequestContext) []kmsg.MetadataResponseBroker {
	l := b.cfg.AdvertisedListeners[0]
	if ctx != nil && ctx.Listener.Name != "" {
		l = ctx.Listener
		for _, a := range b.cfg.AdvertisedListeners {
			if a.Name == l.Name {
				l = a
				break
			}
		}
	}
	host := l.Host
	if host == "" || host == "0.0.0.0" || host == "::" {
		if h, err := os.Hostname(); err == nil {
			host = h
		} else {
			host = "localhost"
		}
	}
	port := l.Port
	if port == 0 {
		// Bound to an ephemeral port: advertise what was actually bound.
		addrs := b.addrs()
		for i, bl := range b.cfg.Listeners {
			if bl.Name == l.Name && i < len(addrs) {
				port = int32(portOf(addrs[i]))
			}
		}
	}
	return []kmsg.MetadataResponseBroker{{NodeID: b.cfg.NodeID, Host: host, Port: port}}
}

func (b *API) handleMetadata(ctx *network.RequestContext, req *kmsg.MetadataRequest) kmsg.Response {
	resp := b.answerMetadata(ctx, req)
	b.metadataAuthzAfter(ctx, req, resp) // authz_metadata.go
	return resp
}

// answerMetadata is Metadata before authorization.
func (b *API) answerMetadata(ctx *network.RequestContext, req *kmsg.MetadataRequest) kmsg.Response {
	if b.cluster != nil {
		return b.handleMetadataCluster(ctx, req) // metadata_cluster.go
	}
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = b.endpointsFor(ctx)
	cid := b.store.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = b.cfg.NodeID
	resp.AuthorizedOperations = authorizedOps(req.IncludeClusterAuthorizedOperations, clusterOps)

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		names := b.rm.TopicNames()
		sort.Strings(names)
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(names))
		for _, n := range names {
			if t := b.rm.TopicByName(n); t != nil {
				resp.Topics = append(resp.Topics, b.metadataTopic(req, t))
			}
		}
		return resp
	}
	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	created := false
	defer func() {
		if created {
			b.co.TopicsChanged()
		}
	}()
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			t := b.rm.TopicByID(rt.TopicID)
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, b.metadataTopic(req, t))
			continue
		}
		name := *rt.Topic
		t := b.rm.TopicByName(name)
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			mt.IsInternal = replica.IsInternal(name)
			switch {
			case replica.ValidTopicName(name) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			case !autoCreate || replica.IsInternal(name):
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !b.mayAutoCreate(ctx, name):
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				// Kafka answers the topic it has just created with
				// LEADER_NOT_AVAILABLE and no partitions (its metadata
				// cache learns of the topic later); the client retries
				// and the next request sees the partitions. Someone
				// else's creation that won the race is answered in full.
				var kerrv *kerr.Error
				t, kerrv, _ = b.rm.CreateTopic(name, -1, -1, nil, false)
				switch {
				case kerrv == kerr.TopicAlreadyExists:
					t = b.rm.TopicByName(name)
					if t == nil {
						mt.ErrorCode = kerr.LeaderNotAvailable.Code
					}
				case kerrv == nil && t != nil:
					created = true
					t = nil
					mt.ErrorCode = kerr.LeaderNotAvailable.Code
				default:
					t = nil
					mt.ErrorCode = kerr.LeaderNotAvailable.Code
				}
			}
			if t == nil {
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		resp.Topics = append(resp.Topics, b.metadataTopic(req, t))
	}
	return resp
}

func (b *API) metadataTopic(req *kmsg.MetadataRequest, t *replica.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Meta.Name
	mt.Topic = &name
	mt.TopicID = t.Meta.ID
	mt.IsInternal = replica.IsInternal(name)
	mt.AuthorizedOperations = authorizedOps(req.IncludeTopicAuthorizedOperations, topicOps)
	// Every partition names this node alone: one shared, read-only slice
	// (Metadata for all of 10,000 partitions allocated two per partition).
	self := []int32{b.cfg.NodeID}
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		mp.Leader = b.cfg.NodeID
		mp.LeaderEpoch = p.LeaderEpoch()
		mp.Replicas = self
		mp.ISR = self
		mp.OfflineReplicas = []int32{}
		if p.Offline() != nil {
			// Kafka's answer for a partition whose only replica sits on an
			// offline log dir: no leader, the replica listed offline.
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
			mp.OfflineReplicas = self
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func portOf(a net.Addr) int {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.Port
	}
	return 0
}
