package api

// CreatePartitions v0–v3 (KIP-195): raises a topic's partition count. v1
// changed only throttling; v2 is flexible; v3 is identical to v2.
//
// Only growth is allowed: a count equal to or below the current one is
// INVALID_PARTITIONS. A manual Assignment must give one replica list per new
// partition, each naming only this broker once (INVALID_REPLICA_ASSIGNMENT
// otherwise). A topic named twice is INVALID_REQUEST. ValidateOnly checks
// without creating. New partitions are created empty, persisted in the
// metadata store, and served at once.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleCreatePartitions(_ *network.RequestContext, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var (
			kerrv *kerr.Error
			msg   string
		)
		if count[rt.Topic] > 1 {
			kerrv, msg = kerr.InvalidRequest, "Duplicate topic in request."
		} else if b.cluster != nil {
			kerrv, msg = b.createPartitionsCluster(rt, req.ValidateOnly) // admin_cluster.go
		} else {
			kerrv, msg = b.rm.CreatePartitions(rt, req.ValidateOnly)
		}
		if kerrv != nil {
			st.ErrorCode = kerrv.Code
			if msg == "" {
				msg = kerrv.Message
			}
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.co.TopicsChanged()
	return resp
}
