package api

// The authorization of every API whose checks do not need the handler's
// state, applied around the handler by Handle (dispatch.go): before it,
// checkRequest either answers the whole request with Kafka's
// *_AUTHORIZATION_FAILED code, or takes the resources the principal may
// not touch out of the request; after it, their error entries are added to
// the response and listings are filtered. Produce, Fetch, Metadata
// auto-creation and the ACL APIs check inside their handlers. The checks
// are Kafka 3.9's KafkaApis ones; see docs/ARCHITECTURE.md.

import (
	"reflect"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checked is the outcome of checkRequest: a whole answer (resp), or a
// function that completes the handler's answer (after), or neither.
type checked struct {
	resp  kmsg.Response
	after func(kmsg.Response)
}

func (c checked) finish(resp kmsg.Response) {
	if c.after != nil && resp != nil {
		c.after(resp)
	}
}

func deny(resp kmsg.Response) checked                 { return checked{resp: resp} }
func then(after func(kmsg.Response)) checked          { return checked{after: after} }
func denyAll(req kmsg.Request, e *kerr.Error) checked { return deny(errorResponse(req, e)) }

// errorResponse is req's response with its top-level ErrorCode (and
// ErrorMessage, where the version has one) set to e. It is for the
// responses whose only error is top-level; kmsg's response types share
// these field names, which reflection reads so that each API need not
// spell its own constructor.
func errorResponse(req kmsg.Request, e *kerr.Error) kmsg.Response {
	resp := req.ResponseKind()
	v := reflect.ValueOf(resp).Elem()
	if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(e.Code))
	}
	if f := v.FieldByName("ErrorMessage"); f.IsValid() && f.Type() == reflect.TypeOf((*string)(nil)) {
		msg := e.Message
		f.Set(reflect.ValueOf(&msg))
	}
	return resp
}

// split divides items into those ok accepts and the others.
func split[T any](items []T, ok func(T) bool) (kept, denied []T) {
	for _, it := range items {
		if ok(it) {
			kept = append(kept, it)
		} else {
			denied = append(denied, it)
		}
	}
	return kept, denied
}

// checkRequest applies the principal's rights to req (nil authorizer:
// nothing to do).
func (b *API) checkRequest(ctx *network.RequestContext, req kmsg.Request) checked {
	if b.authz == nil {
		return checked{}
	}
	switch r := req.(type) {
	// Groups.
	case *kmsg.JoinGroupRequest:
		return b.needGroup(ctx, req, opRead, r.Group)
	case *kmsg.SyncGroupRequest:
		return b.needGroup(ctx, req, opRead, r.Group)
	case *kmsg.HeartbeatRequest:
		return b.needGroup(ctx, req, opRead, r.Group)
	case *kmsg.LeaveGroupRequest:
		return b.needGroup(ctx, req, opRead, r.Group)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return b.checkConsumerGroupHeartbeat(ctx, r)

	// Share groups (authz_share.go).
	case *kmsg.ShareGroupHeartbeatRequest:
		return b.needGroup(ctx, req, opRead, r.GroupID)
	case *kmsg.ShareFetchRequest:
		return b.checkShareFetch(ctx, r)
	case *kmsg.ShareAcknowledgeRequest:
		return b.checkShareAcknowledge(ctx, r)
	case *kmsg.ShareGroupDescribeRequest:
		return b.checkShareGroupDescribe(ctx, r)
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return b.checkDescribeShareGroupOffsets(ctx, r)
	case *kmsg.AlterShareGroupOffsetsRequest:
		return b.needGroup(ctx, req, opRead, r.GroupID)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return b.needGroup(ctx, req, opDelete, r.GroupID)
	case *kmsg.DescribeGroupsRequest:
		return b.checkDescribeGroups(ctx, r)
	case *kmsg.ConsumerGroupDescribeRequest:
		return b.checkConsumerGroupDescribe(ctx, r)
	case *kmsg.ListGroupsRequest:
		return b.checkListGroups(ctx)
	case *kmsg.DeleteGroupsRequest:
		return b.checkDeleteGroups(ctx, r)
	case *kmsg.OffsetDeleteRequest:
		return b.checkOffsetDelete(ctx, r)
	case *kmsg.FindCoordinatorRequest:
		return b.checkFindCoordinator(ctx, r)
	case *kmsg.OffsetCommitRequest:
		return b.checkOffsetCommit(ctx, r)
	case *kmsg.OffsetFetchRequest:
		return b.checkOffsetFetch(ctx, r)

	// Transactions and producer ids.
	case *kmsg.InitProducerIDRequest:
		return b.checkInitProducerID(ctx, r)
	case *kmsg.AddPartitionsToTxnRequest:
		return b.checkAddPartitionsToTxn(ctx, r)
	case *kmsg.AddOffsetsToTxnRequest:
		if !b.authorized(ctx, opWrite, txnRes(r.TransactionalID)) {
			return denyAll(req, kerr.TransactionalIDAuthorizationFailed)
		}
		return b.needGroup(ctx, req, opRead, r.Group)
	case *kmsg.EndTxnRequest:
		if !b.authorized(ctx, opWrite, txnRes(r.TransactionalID)) {
			return denyAll(req, kerr.TransactionalIDAuthorizationFailed)
		}
	case *kmsg.TxnOffsetCommitRequest:
		return b.checkTxnOffsetCommit(ctx, r)
	case *kmsg.DescribeTransactionsRequest:
		return b.checkDescribeTransactions(ctx, r)
	case *kmsg.ListTransactionsRequest:
		return then(func(resp kmsg.Response) {
			lr, ok := resp.(*kmsg.ListTransactionsResponse)
			if !ok {
				return
			}
			lr.TransactionStates, _ = split(lr.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
				return b.authorized(ctx, opDescribe, txnRes(s.TransactionalID))
			})
		})
	case *kmsg.WriteTxnMarkersRequest:
		if !b.authorizedCluster(ctx, opClusterAction) {
			return deny(writeTxnMarkersDenied(r))
		}

	// Topics and partitions.
	case *kmsg.ListOffsetsRequest:
		return b.checkListOffsets(ctx, r)
	case *kmsg.OffsetForLeaderEpochRequest:
		return b.checkOffsetForLeaderEpoch(ctx, r)
	case *kmsg.CreateTopicsRequest:
		return b.checkCreateTopics(ctx, r)
	case *kmsg.DeleteTopicsRequest:
		return b.checkDeleteTopics(ctx, r)
	case *kmsg.CreatePartitionsRequest:
		return b.checkCreatePartitions(ctx, r)
	case *kmsg.DeleteRecordsRequest:
		return b.checkDeleteRecords(ctx, r)
	case *kmsg.DescribeProducersRequest:
		return b.checkDescribeProducers(ctx, r)
	case *kmsg.DescribeTopicPartitionsRequest:
		return b.checkDescribeTopicPartitions(ctx, r)

	// Configs.
	case *kmsg.DescribeConfigsRequest:
		return b.checkDescribeConfigs(ctx, r)
	case *kmsg.AlterConfigsRequest:
		return b.checkAlterConfigs(ctx, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return b.checkIncrementalAlterConfigs(ctx, r)
	case *kmsg.ListConfigResourcesRequest:
		return b.needCluster(ctx, req, opDescribeConfigs)
	case *kmsg.DescribeClientQuotasRequest:
		return b.needCluster(ctx, req, opDescribeConfigs)
	case *kmsg.AlterClientQuotasRequest:
		if !b.authorizedCluster(ctx, opAlterConfigs) {
			return deny(alterClientQuotasDenied(r))
		}

	// The cluster.
	case *kmsg.DescribeClusterRequest:
		return then(func(resp kmsg.Response) {
			dr, ok := resp.(*kmsg.DescribeClusterResponse)
			if !ok {
				return
			}
			dr.ClusterAuthorizedOperations = b.authorizedOpsOf(ctx, r.IncludeClusterAuthorizedOperations, clusterOps, clusterRes)
		})
	case *kmsg.DescribeLogDirsRequest:
		if !b.authorizedCluster(ctx, opDescribe) {
			return denyAll(req, kerr.ClusterAuthorizationFailed) // before v3: no dirs
		}
	case *kmsg.ElectLeadersRequest:
		if !b.authorizedCluster(ctx, opAlter) {
			return deny(electLeadersDenied(r))
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		return b.needCluster(ctx, req, opAlter)
	case *kmsg.ListPartitionReassignmentsRequest:
		return b.needCluster(ctx, req, opDescribe)
	case *kmsg.UpdateFeaturesRequest:
		return b.needCluster(ctx, req, opAlter)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return b.needCluster(ctx, req, opDescribe)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		if !b.authorizedCluster(ctx, opAlter) {
			return deny(alterScramDenied(r))
		}
	case *kmsg.InitializeShareGroupStateRequest, *kmsg.ReadShareGroupStateRequest, *kmsg.WriteShareGroupStateRequest,
		*kmsg.DeleteShareGroupStateRequest, *kmsg.ReadShareGroupStateSummaryRequest:
		// The share coordinator's RPCs (share_state.go), from brokers.
		if !b.authorizedCluster(ctx, opClusterAction) {
			return deny(shareStateDenied(req))
		}
	case *kmsg.LeaderAndISRRequest, *kmsg.StopReplicaRequest, *kmsg.UpdateMetadataRequest, *kmsg.ControlledShutdownRequest,
		*kmsg.AlterPartitionRequest, *kmsg.AllocateProducerIDsRequest:
		if b.cluster != nil { // a single node closes the connection (cluster.go)
			return b.needCluster(ctx, req, opClusterAction)
		}
	}
	return checked{}
}

// needGroup answers req GROUP_AUTHORIZATION_FAILED unless op on group is allowed.
func (b *API) needGroup(ctx *network.RequestContext, req kmsg.Request, op opType, group string) checked {
	if !b.authorized(ctx, op, groupRes(group)) {
		return denyAll(req, kerr.GroupAuthorizationFailed)
	}
	return checked{}
}

// needCluster answers req CLUSTER_AUTHORIZATION_FAILED unless op on the
// cluster is allowed.
func (b *API) needCluster(ctx *network.RequestContext, req kmsg.Request, op opType) checked {
	if !b.authorizedCluster(ctx, op) {
		return denyAll(req, kerr.ClusterAuthorizationFailed)
	}
	return checked{}
}
