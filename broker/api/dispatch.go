package api

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handle answers one request; a nil response means none is sent (acks=0).
func (b *API) Handle(ctx *network.RequestContext, req protocol.Request) kmsg.Response {
	if req.Body == nil {
		return b.apiVersionsUnsupported()
	}
	switch r := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		return b.handleApiVersions(ctx, r)
	case *kmsg.MetadataRequest:
		return b.handleMetadata(ctx, r)
	case *kmsg.ProduceRequest:
		return b.handleProduce(ctx, r)
	case *kmsg.FetchRequest:
		return b.handleFetch(ctx, r)
	case *kmsg.ListOffsetsRequest:
		return b.handleListOffsets(ctx, r)
	case *kmsg.CreateTopicsRequest:
		return b.handleCreateTopics(ctx, r)
	case *kmsg.DeleteTopicsRequest:
		return b.handleDeleteTopics(ctx, r)
	case *kmsg.InitProducerIDRequest:
		return b.handleInitProducerID(ctx, r)
	case *kmsg.DescribeConfigsRequest:
		return b.handleDescribeConfigs(ctx, r)
	case *kmsg.DescribeClusterRequest:
		return b.handleDescribeCluster(ctx, r)
	case *kmsg.DeleteRecordsRequest:
		return b.handleDeleteRecords(ctx, r)
	case *kmsg.OffsetForLeaderEpochRequest:
		return b.handleOffsetForLeaderEpoch(ctx, r)
	case *kmsg.AlterConfigsRequest:
		return b.handleAlterConfigs(ctx, r)
	case *kmsg.DescribeLogDirsRequest:
		return b.handleDescribeLogDirs(ctx, r)
	case *kmsg.CreatePartitionsRequest:
		return b.handleCreatePartitions(ctx, r)
	case *kmsg.ElectLeadersRequest:
		return b.handleElectLeaders(ctx, r)
	case *kmsg.ListConfigResourcesRequest:
		return b.handleListConfigResources(ctx, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return b.handleIncrementalAlterConfigs(ctx, r)
	case *kmsg.DescribeTopicPartitionsRequest:
		return b.handleDescribeTopicPartitions(ctx, r)
	case *kmsg.FindCoordinatorRequest:
		return b.handleFindCoordinator(ctx, r)
	case *kmsg.OffsetCommitRequest:
		return b.handleOffsetCommit(ctx, r)
	case *kmsg.OffsetFetchRequest:
		return b.handleOffsetFetch(ctx, r)
	case *kmsg.TxnOffsetCommitRequest:
		return b.handleTxnOffsetCommit(ctx, r)
	case *kmsg.AddPartitionsToTxnRequest, *kmsg.AddOffsetsToTxnRequest, *kmsg.EndTxnRequest,
		*kmsg.DescribeTransactionsRequest, *kmsg.ListTransactionsRequest:
		return b.handleTxnRequest(ctx, r)
	case *kmsg.WriteTxnMarkersRequest:
		return b.handleWriteTxnMarkers(ctx, r)
	case *kmsg.DescribeProducersRequest:
		return b.handleDescribeProducers(ctx, r)
	case *kmsg.ListGroupsRequest:
		return b.handleListGroupsWithShare(ctx, r) // coordinator_requests.go: adds share groups
	case *kmsg.DeleteGroupsRequest:
		return b.handleDeleteGroupsWithShare(ctx, r) // coordinator_requests.go: deletes share groups
	case *kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest, *kmsg.HeartbeatRequest, *kmsg.LeaveGroupRequest,
		*kmsg.DescribeGroupsRequest, *kmsg.OffsetDeleteRequest,
		*kmsg.ConsumerGroupHeartbeatRequest, *kmsg.ConsumerGroupDescribeRequest:
		return b.handleGroupRequest(ctx, r)
	// KIP-932 share groups (share_*.go).
	case *kmsg.ShareGroupHeartbeatRequest:
		return b.handleShareGroupHeartbeat(ctx, r)
	case *kmsg.ShareGroupDescribeRequest:
		return b.handleShareGroupDescribe(ctx, r)
	case *kmsg.ShareFetchRequest:
		return b.handleShareFetch(ctx, r)
	case *kmsg.ShareAcknowledgeRequest:
		return b.handleShareAcknowledge(ctx, r)
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return b.handleDescribeShareGroupOffsets(ctx, r)
	case *kmsg.AlterShareGroupOffsetsRequest:
		return b.handleAlterShareGroupOffsets(ctx, r)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return b.handleDeleteShareGroupOffsets(ctx, r)
	// SASL (sasl.go; authentication itself is network/sasl) and SCRAM credentials.
	case *kmsg.SASLHandshakeRequest:
		return b.handleSASLHandshake(ctx, r)
	case *kmsg.SASLAuthenticateRequest:
		return b.handleSASLAuthenticate(ctx, r)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return b.handleDescribeUserSCRAMCredentials(ctx, r)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return b.handleAlterUserSCRAMCredentials(ctx, r)
	}
	b.log.Error("no handler for supported api", "api", kmsg.NameForKey(req.Header.APIKey))
	return nil
}
