package api

// TxnOffsetCommit v0–v6. v2 leader epochs; v3 flexible, generation, member
// and instance ids checked like OffsetCommit; v5 (KIP-890 part 2) adds the
// group's __consumer_offsets partition to the transaction itself; v6 names
// topics by id (resolved here, UNKNOWN_TOPIC_ID for an id the cluster does
// not know; the rest goes on as v5 with names). The offsets are written at once
// as a transactional batch of the producer to the group's __consumer_offsets
// partition but become visible only when the transaction's commit marker is
// written there (groups.completeTxnOffsets); an abort drops them. Partitions
// that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleTxnOffsetCommit(ctx *network.RequestContext, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	if req.Version < 6 {
		return b.txnOffsetCommit(ctx, req)
	}
	named := *req
	named.Version = 5
	named.Topics = nil
	ids := map[string][16]byte{}
	var unknown []kmsg.TxnOffsetCommitResponseTopic
	for _, rt := range req.Topics {
		t, ok := b.topicWithID(rt.TopicID)
		if !ok {
			ut := kmsg.NewTxnOffsetCommitResponseTopic()
			ut.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				ut.Partitions = append(ut.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: rp.Partition, ErrorCode: kerr.UnknownTopicID.Code})
			}
			unknown = append(unknown, ut)
			continue
		}
		nt := rt
		nt.Topic = t.Name
		ids[nt.Topic] = rt.TopicID
		named.Topics = append(named.Topics, nt)
	}
	resp := b.txnOffsetCommit(ctx, &named)
	r, ok := resp.(*kmsg.TxnOffsetCommitResponse)
	if !ok {
		return resp
	}
	r.Version = req.Version
	for i := range r.Topics {
		r.Topics[i].TopicID = ids[r.Topics[i].Topic]
	}
	r.Topics = append(r.Topics, unknown...)
	return r
}

func (b *API) txnOffsetCommit(ctx *network.RequestContext, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	tok := make(coordhost.Token, 1)
	b.co.TxnOffsetCommit(req, tok)
	select {
	case resp := <-tok: // a single node acknowledges the append in place
		return resp
	default:
	}
	return b.awaitReply(ctx, req, tok, nil)
}
