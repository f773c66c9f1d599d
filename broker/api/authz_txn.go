package api

// Authorization of the transaction and producer-id APIs (authz_dispatch.go),
// as Kafka's KafkaApis.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId: WRITE on the transactional id; without one, IDEMPOTENT_WRITE
// on the cluster or WRITE on some topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.
func (b *API) checkInitProducerID(ctx *network.RequestContext, r *kmsg.InitProducerIDRequest) checked {
	if r.TransactionalID != nil {
		if !b.authorized(ctx, opWrite, txnRes(*r.TransactionalID)) {
			return deny(initProducerIDDenied(r, kerr.TransactionalIDAuthorizationFailed))
		}
		return checked{}
	}
	if !b.authorizedCluster(ctx, opIdempotentWrite) && !b.authorizedByType(ctx, opWrite, topicType) {
		return deny(initProducerIDDenied(r, kerr.ClusterAuthorizationFailed))
	}
	return checked{}
}

func initProducerIDDenied(r *kmsg.InitProducerIDRequest, e *kerr.Error) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = e.Code, -1, -1
	return resp
}

// addTxnPartitionsDenied answers one transaction's AddPartitionsToTxn when
// the principal may not write its id (every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED) or one of its topics (those
// TOPIC_AUTHORIZATION_FAILED, unknown ones UNKNOWN_TOPIC_OR_PARTITION, the
// rest OPERATION_NOT_ATTEMPTED), as Kafka; nil when all is allowed.
func (b *API) addTxnPartitionsDenied(ctx *network.RequestContext, txnID string, topics []kmsg.AddPartitionsToTxnRequestTopic) map[string]map[int32]int16 {
	txnOK := b.authorized(ctx, opWrite, txnRes(txnID))
	// Internal topics are left to the coordinator, as Kafka does.
	writable := func(topic string) bool { return replica.IsInternal(topic) || b.authorizedTopic(ctx, opWrite, topic) }
	anyDenied := !txnOK
	for _, t := range topics {
		if !writable(t.Topic) {
			anyDenied = true
		}
	}
	if !anyDenied {
		return nil
	}
	out := map[string]map[int32]int16{}
	for _, t := range topics {
		code := kerr.OperationNotAttempted.Code
		switch {
		case !txnOK:
			code = kerr.TransactionalIDAuthorizationFailed.Code
		case !writable(t.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		case b.rm.TopicByName(t.Topic) == nil && (b.cluster == nil || b.cluster.Cache == nil):
			code = kerr.UnknownTopicOrPartition.Code
		}
		if out[t.Topic] == nil {
			out[t.Topic] = map[int32]int16{}
		}
		for _, p := range t.Partitions {
			out[t.Topic][p] = code
		}
	}
	return out
}

// AddPartitionsToTxn: v0–3 from clients (addTxnPartitionsDenied); v4+
// batched by brokers, which needs CLUSTER_ACTION (Kafka's KafkaApis).
func (b *API) checkAddPartitionsToTxn(ctx *network.RequestContext, r *kmsg.AddPartitionsToTxnRequest) checked {
	if r.Version < 4 {
		denied := b.addTxnPartitionsDenied(ctx, r.TransactionalID, r.Topics)
		if denied == nil {
			return checked{}
		}
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, denied[t.Topic][p]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return deny(resp)
	}
	// Brokers send v4+ (KIP-890 verification): CLUSTER_ACTION, and no
	// per-transaction checks (the producer's own Produce was checked).
	if !b.authorizedCluster(ctx, opClusterAction) {
		return denyAll(r, kerr.ClusterAuthorizationFailed)
	}
	return checked{}
}

// TxnOffsetCommit: WRITE on the transactional id, READ on the group, READ
// on each topic.
func (b *API) checkTxnOffsetCommit(ctx *network.RequestContext, r *kmsg.TxnOffsetCommitRequest) checked {
	whole := func(e *kerr.Error) checked {
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range r.Topics {
			resp.Topics = append(resp.Topics, txnCommitDenied(t, e))
		}
		return deny(resp)
	}
	if !b.authorized(ctx, opWrite, txnRes(r.TransactionalID)) {
		return whole(kerr.TransactionalIDAuthorizationFailed)
	}
	if !b.authorized(ctx, opRead, groupRes(r.Group)) {
		return whole(kerr.GroupAuthorizationFailed)
	}
	var denied []kmsg.TxnOffsetCommitRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool {
		name := t.Topic
		if r.Version >= 6 {
			if name = b.topicNameByID(t.TopicID); name == "" {
				return true
			}
		}
		return b.authorizedTopic(ctx, opRead, name)
	})
	return then(func(resp kmsg.Response) {
		tr, ok := resp.(*kmsg.TxnOffsetCommitResponse)
		if !ok {
			return
		}
		for _, t := range denied {
			tr.Topics = append(tr.Topics, txnCommitDenied(t, kerr.TopicAuthorizationFailed))
		}
	})
}

func txnCommitDenied(t kmsg.TxnOffsetCommitRequestTopic, e *kerr.Error) kmsg.TxnOffsetCommitResponseTopic {
	rt := kmsg.NewTxnOffsetCommitResponseTopic()
	rt.Topic, rt.TopicID = t.Topic, t.TopicID
	for _, p := range t.Partitions {
		rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, e.Code
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// DescribeTransactions: DESCRIBE on each transactional id; the topics of a
// transaction the principal may not DESCRIBE are left out.
func (b *API) checkDescribeTransactions(ctx *network.RequestContext, r *kmsg.DescribeTransactionsRequest) checked {
	var denied []string
	r.TransactionalIDs, denied = split(r.TransactionalIDs, func(id string) bool { return b.authorized(ctx, opDescribe, txnRes(id)) })
	return then(func(resp kmsg.Response) {
		dr, ok := resp.(*kmsg.DescribeTransactionsResponse)
		if !ok {
			return
		}
		for i := range dr.TransactionStates {
			s := &dr.TransactionStates[i]
			s.Topics, _ = split(s.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return b.authorizedTopic(ctx, opDescribe, t.Topic)
			})
		}
		for _, id := range denied {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
			s.ProducerID, s.ProducerEpoch = -1, -1
			dr.TransactionStates = append(dr.TransactionStates, s)
		}
	})
}

// writeTxnMarkersDenied answers WriteTxnMarkers without CLUSTER_ACTION:
// every partition CLUSTER_AUTHORIZATION_FAILED.
func writeTxnMarkersDenied(r *kmsg.WriteTxnMarkersRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}
