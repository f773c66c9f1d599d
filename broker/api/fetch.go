package api

// Fetch v4–v16. v4 isolation level and LastStableOffset; v5 LogStartOffset;
// v7 incremental fetch sessions (KIP-227, replica/fetch_session.go); v9
// CurrentLeaderEpoch checks; v11 rack / PreferredReadReplica; v12 flexible
// and LastFetchedEpoch; v13 topic ids instead of names; v15 ReplicaState;
// v16 NodeEndpoints (tagged).
//
// Limits: MaxBytes bounds the whole response and PartitionMaxBytes each
// partition, except that the first batch of the first partition with data is
// returned whole even when larger (KIP-74), so a consumer always progresses.
// The broker's fetch.max.bytes caps MaxBytes whatever the client asks, as
// Kafka's KafkaApis does, so no client can make one response hold more
// (but the first batch).

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleFetch(ctx *network.RequestContext, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if limit := b.cfg.FetchMaxBytes; limit > 0 {
		// Kafka answers min(MaxBytes, fetch.max.bytes); a MaxBytes ≤ 0 (which
		// the replica reads as no limit) gets the one batch Kafka would give.
		req.MaxBytes = max(min(req.MaxBytes, limit), 1)
		// As Kafka: a MinBytes the cap can never satisfy would always wait MaxWait.
		req.MinBytes = min(req.MinBytes, req.MaxBytes)
	}
	denied := b.fetchAuthzBefore(ctx, req) // authz_fetch.go
	// The records stay in the segment files (protocol.Spliced); the
	// connection sends them with sendfile and releases them (also those
	// of partitions the checks below leave out of the answer).
	spl := protocol.NewSpliced(resp)
	if !denied.skip {
		b.rm.FetchSpliced(req, resp, spl)
	}
	b.fetchAuthzAfter(ctx, req, resp, denied)
	b.leaderHintsFetch(ctx, resp) // cluster mode: metadata_cluster.go
	return spl
}
