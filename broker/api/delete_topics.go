package api

// DeleteTopics v0–v6. v4 flexible; v5 ErrorMessage; v6 topics by name or id.
// Deletion removes the topic from metadata and its partitions' data from disk
// before answering; in cluster mode the controller deletes it and the answer
// waits until this broker's metadata no longer shows it (admin_wait.go).

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDeleteTopics(_ *network.RequestContext, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, rt := range req.Topics {
			targets = append(targets, target{rt.Topic, rt.TopicID})
		}
	} else {
		for i := range req.TopicNames {
			targets = append(targets, target{name: &req.TopicNames[i]})
		}
	}
	var deleted []string // cluster mode: to wait for
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var kerrv *kerr.Error
		switch {
		case b.cluster != nil:
			st.Topic, st.TopicID, kerrv = b.deleteTopicCluster(tg.name, tg.id) // admin_cluster.go
		case tg.name == nil || *tg.name == "":
			if t := b.rm.TopicByID(tg.id); t == nil {
				kerrv = kerr.UnknownTopicID
			} else {
				name := t.Meta.Name
				st.Topic = &name
				kerrv = b.rm.DeleteTopic(name)
			}
		case replica.IsInternal(*tg.name):
			kerrv = kerr.TopicAuthorizationFailed
		default:
			if t := b.rm.TopicByName(*tg.name); t != nil {
				st.TopicID = t.Meta.ID
			}
			kerrv = b.rm.DeleteTopic(*tg.name)
		}
		if kerrv != nil {
			st.ErrorCode = kerrv.Code
			msg := kerrv.Message
			st.ErrorMessage = &msg
		} else if b.cluster != nil && st.Topic != nil {
			deleted = append(deleted, *st.Topic)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if b.cluster != nil {
		pending := b.awaitDeleted(req.TimeoutMillis, deleted) // admin_wait.go
		for i := range resp.Topics {
			if t := resp.Topics[i].Topic; t != nil && pending[*t] {
				resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = kerr.RequestTimedOut.Code, nil
			}
		}
		return resp // UpdateMetadata tells the KIP-848 coordinator
	}
	b.co.TopicsChanged()
	return resp
}
