package api

// TxnOffsetCommit v0–v5. v2 leader epochs; v3 flexible, generation, member
// and instance ids checked like OffsetCommit; v5 (KIP-890 part 2) adds the
// group's __consumer_offsets partition to the transaction itself. The offsets are written at once
// as a transactional batch of the producer to the group's __consumer_offsets
// partition but become visible only when the transaction's commit marker is
// written there (groups.completeTxnOffsets); an abort drops them. Partitions
// that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleTxnOffsetCommit(ctx *network.RequestContext, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	tok := make(coordhost.Token, 1)
	b.co.TxnOffsetCommit(req, tok)
	select {
	case resp := <-tok: // a single node acknowledges the append in place
		return resp
	default:
	}
	return b.awaitReply(ctx, req, tok, nil)
}
