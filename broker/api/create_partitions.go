package api

// CreatePartitions v0–v3 (KIP-195): raises a topic's partition count. v1
// changed only throttling; v2 is flexible; v3 is identical to v2.
//
// Only growth is allowed: a count equal to or below the current one is
// INVALID_PARTITIONS. A manual Assignment must give one replica list per new
// partition, each naming only this broker once (INVALID_REPLICA_ASSIGNMENT
// otherwise). A topic named twice is INVALID_REQUEST. ValidateOnly checks
// without creating. New partitions are created empty, persisted in the
// metadata store, and served at once; in cluster mode the answer waits until
// this broker's metadata shows a leader for each (admin_wait.go), and a
// manual assignment is checked as Kafka 3.9 does (admin_cluster.go).

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleCreatePartitions(_ *network.RequestContext, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	created := map[string]partitionRange{} // cluster mode: to wait for
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
			var r partitionRange
			r, kerrv, msg = b.createPartitionsCluster(rt, req.ValidateOnly) // admin_cluster.go
			if kerrv == nil && !req.ValidateOnly {
				created[rt.Topic] = r
			}
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
	if b.cluster != nil {
		pending := b.awaitPartitions(req.TimeoutMillis, created) // admin_wait.go
		for i := range resp.Topics {
			if pending[resp.Topics[i].Topic] {
				resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = kerr.RequestTimedOut.Code, nil
			}
		}
		return resp // UpdateMetadata tells the KIP-848 coordinator
	}
	b.co.TopicsChanged()
	return resp
}
