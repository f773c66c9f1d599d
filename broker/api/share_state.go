package api

// The share coordinator RPCs (KIP-932), sent by share-partition leaders to
// the leader of the share-partition's __share_group_state partition (and
// by the group coordinator, for initialization, deletion and summaries):
//
//   - InitializeShareGroupState (83) v0: set a key's state epoch and start
//     offset, with no batches (coordhost.Host.ShareStateInitialize).
//   - ReadShareGroupState (84) v0: a key's state epoch, start offset and
//     state batches; a leader epoch above the key's becomes its leader epoch.
//   - WriteShareGroupState (85) v0–v1: replace a key's state; v1 adds
//     DeliveryCompleteCount, which kbroker does not need (it counts the
//     finished offsets from the batches when asked) and ignores.
//   - DeleteShareGroupState (86) v0: delete a key's state (a tombstone).
//   - ReadShareGroupStateSummary (87) v0–v1: a key's state epoch, leader
//     epoch and start offset; v1 adds DeliveryCompleteCount (the
//     Acknowledged and Archived offsets at or above the start offset).
//
// Every request is one group and any number of topic partitions, each
// answered on its own, as Kafka's ShareCoordinatorService: a request with
// no group id, no topics, or a topic with no partitions gets an empty
// answer; a negative partition INVALID_REQUEST; a key whose
// __share_group_state partition this broker does not lead NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS while that partition loads,
// COORDINATOR_NOT_AVAILABLE once the broker shuts down; a stale leader
// epoch FENCED_LEADER_EPOCH, a stale state epoch FENCED_STATE_EPOCH
// (Write, Initialize); a state that is not a valid snapshot
// INVALID_REQUEST; a failed append of the state COORDINATOR_NOT_AVAILABLE
// (timeout, too few replicas), NOT_COORDINATOR (leadership lost) or
// UNKNOWN_SERVER_ERROR, as Kafka's coordinators map append errors. A key
// with no state reads as StartOffset -1 and StateEpoch 0 (Kafka's
// uninitialized partition), its summary also with LeaderEpoch -1 and
// DeliveryCompleteCount -1. Writes answer once their record is
// replicated: the handler waits for every partition's acknowledgement.
// Kafka requires CLUSTER_ACTION on the cluster (authz_dispatch.go);
// without it every partition answers CLUSTER_AUTHORIZATION_FAILED.
//
// Where kbroker differs from Kafka: writes carry the whole state and
// replace it (Kafka merges a write's batches into the stored ones; for a
// leader that always sends its whole window the result is the same) and
// are stored as snapshots only (no ShareUpdate records); a topic or
// partition the metadata does not know is not refused with
// UNKNOWN_TOPIC_OR_PARTITION (the leaders only ask for partitions they
// lead); a read's raised leader epoch is kept in memory, not written (as
// Kafka 3.9; Kafka 4 writes a record), so it is lost when the coordinator
// moves; Initialize with StartOffset -1 keeps the stored start offset and
// is INVALID_REQUEST for a key with no state (a kbroker snapshot always
// has a start offset); a read with leader epoch -1 is neither fenced nor
// raises the epoch. The API keys are served in cluster mode only (the
// advertised set, share_cluster.go).

import (
	"math"
	"sync"

	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareStateStore is the share coordinator's state store
// (coordhost/share_store.go): the persisted state of the share-partitions
// whose __share_group_state partition this broker leads. Each done runs
// exactly once, on any goroutine, with no lock of the store held.
type ShareStateStore interface {
	ShareStateRead(group string, tp share.TopicPartition, leaderEpoch int32) (s share.Snapshot, found bool, code int16)
	ShareStateWrite(group string, tp share.TopicPartition, s share.Snapshot, done func(code int16))
	ShareStateInitialize(group string, tp share.TopicPartition, stateEpoch int32, startOffset int64, done func(code int16))
	ShareStateDelete(group string, tp share.TopicPartition, done func(code int16))
}

var _ ShareStateStore = (*coordhost.Host)(nil)

// shareStateError is the ErrorMessage of a partition's code (nil for 0).
func shareStateError(code int16) *string {
	if code == 0 {
		return nil
	}
	msg := kerr.ErrorForCode(code).Error()
	return &msg
}

// shareStateAnswers collects the codes and messages of a request's
// partitions as their acknowledgements arrive (possibly on other
// goroutines, possibly before the call that takes the done returns); wait
// returns once every one arrived. Each done writes only its own
// partition's code and message, which nothing reads before wait returns
// (Done happens before Wait returns).
type shareStateAnswers struct{ wg sync.WaitGroup }

// async returns the done of one partition: it sets *code and *msg.
func (a *shareStateAnswers) async(code *int16, msg **string) func(int16) {
	a.wg.Add(1)
	return func(c int16) {
		*code, *msg = c, shareStateError(c)
		a.wg.Done()
	}
}

func (a *shareStateAnswers) wait() { a.wg.Wait() }

// shareStateRequestEmpty reports whether Kafka answers the request with an
// empty response: no group id, no topics, or a topic with no partitions.
func shareStateRequestEmpty(group string, topics int, partitions func(i int) int) bool {
	if group == "" || topics == 0 {
		return true
	}
	for i := range topics {
		if partitions(i) == 0 {
			return true
		}
	}
	return false
}

func (b *API) handleInitializeShareGroupState(_ *network.RequestContext, req *kmsg.InitializeShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	if shareStateRequestEmpty(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	var a shareStateAnswers
	resp.Topics = make([]kmsg.InitializeShareGroupStateResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		*st = kmsg.NewInitializeShareGroupStateResponseTopic()
		st.TopicID = rt.TopicID
		st.Partitions = make([]kmsg.InitializeShareGroupStateResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			*sp = kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			sp.Partition = rp.Partition
			done := a.async(&sp.ErrorCode, &sp.ErrorMessage)
			if rp.Partition < 0 {
				done(kerr.InvalidRequest.Code)
				continue
			}
			tp := share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
			b.co.ShareStateInitialize(req.GroupID, tp, rp.StateEpoch, rp.StartOffset, done)
		}
	}
	a.wait()
	return resp
}

func (b *API) handleReadShareGroupState(_ *network.RequestContext, req *kmsg.ReadShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	if shareStateRequestEmpty(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewReadShareGroupStateResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			sp.Partition = rp.Partition
			if rp.Partition < 0 {
				sp.ErrorCode = kerr.InvalidRequest.Code
			} else {
				tp := share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
				s, found, code := b.co.ShareStateRead(req.GroupID, tp, rp.LeaderEpoch)
				sp.ErrorCode = code
				sp.StartOffset = -1 // Kafka's uninitialized start offset
				if code == 0 && found {
					sp.StateEpoch, sp.StartOffset = s.StateEpoch, s.StartOffset
					for _, sb := range s.Batches {
						ob := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
						ob.FirstOffset, ob.LastOffset, ob.DeliveryState, ob.DeliveryCount = sb.First, sb.Last, sb.State, sb.Count
						sp.StateBatches = append(sp.StateBatches, ob)
					}
				}
			}
			sp.ErrorMessage = shareStateError(sp.ErrorCode)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *API) handleWriteShareGroupState(_ *network.RequestContext, req *kmsg.WriteShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	if shareStateRequestEmpty(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	var a shareStateAnswers
	resp.Topics = make([]kmsg.WriteShareGroupStateResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		*st = kmsg.NewWriteShareGroupStateResponseTopic()
		st.TopicID = rt.TopicID
		st.Partitions = make([]kmsg.WriteShareGroupStateResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			*sp = kmsg.NewWriteShareGroupStateResponseTopicPartition()
			sp.Partition = rp.Partition
			done := a.async(&sp.ErrorCode, &sp.ErrorMessage)
			if rp.Partition < 0 {
				done(kerr.InvalidRequest.Code)
				continue
			}
			s := share.Snapshot{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset}
			for _, rb := range rp.StateBatches {
				s.Batches = append(s.Batches, share.StateBatch{First: rb.FirstOffset, Last: rb.LastOffset, State: rb.DeliveryState, Count: rb.DeliveryCount})
			}
			tp := share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
			b.co.ShareStateWrite(req.GroupID, tp, s, done)
		}
	}
	a.wait()
	return resp
}

func (b *API) handleDeleteShareGroupState(_ *network.RequestContext, req *kmsg.DeleteShareGroupStateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	if shareStateRequestEmpty(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	var a shareStateAnswers
	resp.Topics = make([]kmsg.DeleteShareGroupStateResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		*st = kmsg.NewDeleteShareGroupStateResponseTopic()
		st.TopicID = rt.TopicID
		st.Partitions = make([]kmsg.DeleteShareGroupStateResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			*sp = kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			sp.Partition = rp.Partition
			done := a.async(&sp.ErrorCode, &sp.ErrorMessage)
			if rp.Partition < 0 {
				done(kerr.InvalidRequest.Code)
				continue
			}
			tp := share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
			b.co.ShareStateDelete(req.GroupID, tp, done)
		}
	}
	a.wait()
	return resp
}

func (b *API) handleReadShareGroupStateSummary(_ *network.RequestContext, req *kmsg.ReadShareGroupStateSummaryRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	if shareStateRequestEmpty(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.StartOffset, sp.LeaderEpoch, sp.DeliveryCompleteCount = -1, -1, -1
			if rp.Partition < 0 {
				sp.ErrorCode = kerr.InvalidRequest.Code
			} else {
				// As Kafka, the summary fences no leader epoch: read
				// with -1, which neither fences nor raises it.
				tp := share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
				s, found, code := b.co.ShareStateRead(req.GroupID, tp, -1)
				sp.ErrorCode = code
				if code == 0 && found {
					sp.StateEpoch, sp.LeaderEpoch, sp.StartOffset = s.StateEpoch, s.LeaderEpoch, s.StartOffset
					sp.DeliveryCompleteCount = int32(min(coordhost.ShareFinishedOffsets(s), math.MaxInt32))
				}
			}
			sp.ErrorMessage = shareStateError(sp.ErrorCode)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// shareStateDenied answers a share coordinator RPC without CLUSTER_ACTION:
// every partition CLUSTER_AUTHORIZATION_FAILED (Kafka's getErrorResponse).
func shareStateDenied(req kmsg.Request) kmsg.Response {
	code := kerr.ClusterAuthorizationFailed.Code
	msg := shareStateError(code)
	resp := req.ResponseKind()
	switch r := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		out := resp.(*kmsg.InitializeShareGroupStateResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewInitializeShareGroupStateResponseTopic()
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, code, msg
				st.Partitions = append(st.Partitions, sp)
			}
			out.Topics = append(out.Topics, st)
		}
	case *kmsg.ReadShareGroupStateRequest:
		out := resp.(*kmsg.ReadShareGroupStateResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewReadShareGroupStateResponseTopic()
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage, sp.StartOffset = rp.Partition, code, msg, -1
				st.Partitions = append(st.Partitions, sp)
			}
			out.Topics = append(out.Topics, st)
		}
	case *kmsg.WriteShareGroupStateRequest:
		out := resp.(*kmsg.WriteShareGroupStateResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewWriteShareGroupStateResponseTopic()
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, code, msg
				st.Partitions = append(st.Partitions, sp)
			}
			out.Topics = append(out.Topics, st)
		}
	case *kmsg.DeleteShareGroupStateRequest:
		out := resp.(*kmsg.DeleteShareGroupStateResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewDeleteShareGroupStateResponseTopic()
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, code, msg
				st.Partitions = append(st.Partitions, sp)
			}
			out.Topics = append(out.Topics, st)
		}
	case *kmsg.ReadShareGroupStateSummaryRequest:
		out := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, code, msg
				sp.StartOffset, sp.LeaderEpoch, sp.DeliveryCompleteCount = -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			out.Topics = append(out.Topics, st)
		}
	}
	return resp
}
