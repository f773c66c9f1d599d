package api

// In cluster mode a broker coordinates a group or transactional id only
// while it leads that id's partition of __consumer_offsets or
// __transaction_state (FindCoordinator names that leader). A request naming
// one group or transactional id that reaches another broker answers
// NOT_COORDINATOR, as Kafka's coordinators do for partitions they have not
// loaded, so the client looks the coordinator up again. Requests naming
// several groups (DescribeGroups, DeleteGroups, batched OffsetFetch) and
// ListGroups are served from whatever this broker has loaded.

import (
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// notCoordinator returns the NOT_COORDINATOR answer to req when this broker
// does not coordinate the one group or transactional id it names; nil to
// serve it (a single node, or a request of another kind).
func (b *API) notCoordinator(req kmsg.Request) kmsg.Response {
	if b.cluster == nil {
		return nil
	}
	topic, key, ok := coordinatorKey(req)
	if !ok || b.coordinates(topic, key) {
		return nil
	}
	code := kerr.NotCoordinator.Code
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.ErrorCode, r.MemberID = code, req.(*kmsg.JoinGroupRequest).MemberID
	case *kmsg.SyncGroupResponse:
		r.ErrorCode = code
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.LeaveGroupResponse:
		r.ErrorCode = code
	case *kmsg.OffsetDeleteResponse:
		r.ErrorCode = code
	case *kmsg.ConsumerGroupHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.ShareGroupHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.AddOffsetsToTxnResponse:
		r.ErrorCode = code
	case *kmsg.EndTxnResponse:
		r.ErrorCode = code
	case *kmsg.InitProducerIDResponse:
		r.ErrorCode, r.ProducerID, r.ProducerEpoch = code, -1, -1
	case *kmsg.OffsetCommitResponse:
		for _, t := range req.(*kmsg.OffsetCommitRequest).Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.TxnOffsetCommitResponse:
		for _, t := range req.(*kmsg.TxnOffsetCommitRequest).Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.OffsetFetchResponse:
		r.ErrorCode = code // v2–v7; v0–v1 carry it per partition
		for _, t := range req.(*kmsg.OffsetFetchRequest).Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.AddPartitionsToTxnResponse:
		// v4+ from a partition leader (coordhost/txn_remote.go) names one
		// transaction; answered per partition there too.
		for _, tr := range req.(*kmsg.AddPartitionsToTxnRequest).Transactions {
			rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rtx.TransactionalID = tr.TransactionalID
			for _, t := range tr.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rtx.Topics = append(rtx.Topics, rt)
			}
			r.Transactions = append(r.Transactions, rtx)
		}
		for _, t := range req.(*kmsg.AddPartitionsToTxnRequest).Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: code})
			}
			r.Topics = append(r.Topics, rt)
		}
	default:
		return nil
	}
	return resp
}

// coordinatorKey is the internal topic and key a request is coordinated
// by, when it names exactly one.
func coordinatorKey(req kmsg.Request) (topic, key string, ok bool) {
	const groups, txns = "__consumer_offsets", "__transaction_state"
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		return groups, r.Group, true
	case *kmsg.SyncGroupRequest:
		return groups, r.Group, true
	case *kmsg.HeartbeatRequest:
		return groups, r.Group, true
	case *kmsg.LeaveGroupRequest:
		return groups, r.Group, true
	case *kmsg.OffsetCommitRequest:
		return groups, r.Group, true
	case *kmsg.OffsetDeleteRequest:
		return groups, r.Group, true
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return groups, r.Group, true
	case *kmsg.ShareGroupHeartbeatRequest:
		return groups, r.GroupID, true
	case *kmsg.TxnOffsetCommitRequest:
		return groups, r.Group, true
	case *kmsg.OffsetFetchRequest:
		return groups, r.Group, r.Version < 8
	case *kmsg.AddOffsetsToTxnRequest:
		return txns, r.TransactionalID, true
	case *kmsg.EndTxnRequest:
		return txns, r.TransactionalID, true
	case *kmsg.AddPartitionsToTxnRequest:
		if r.Version >= 4 {
			if len(r.Transactions) == 1 {
				return txns, r.Transactions[0].TransactionalID, true
			}
			return "", "", false
		}
		return txns, r.TransactionalID, true
	case *kmsg.InitProducerIDRequest:
		if r.TransactionalID == nil {
			return "", "", false
		}
		return txns, *r.TransactionalID, true
	}
	return "", "", false
}

// coordinates reports whether this broker leads key's partition of topic.
func (b *API) coordinates(topic, key string) bool {
	t := b.rm.TopicByName(topic)
	if t == nil || len(t.Partitions) == 0 {
		return false
	}
	n := int32(len(t.Partitions))
	p := group.PartitionFor(key, n)
	if topic == "__transaction_state" {
		p = txn.PartitionFor(key, n)
	}
	return t.Partitions[p].IsLeader()
}
