package api

// The authorization checks of the handlers, as Kafka's KafkaApis makes them,
// kept here so that each handler carries only a one-line call. The
// operation names are short aliases so that handler files need not import
// broker/authz.

import (
	"github.com/kbroker/kbroker/broker/authz"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	opRead            = authz.OpRead
	opWrite           = authz.OpWrite
	opCreate          = authz.OpCreate
	opDelete          = authz.OpDelete
	opAlter           = authz.OpAlter
	opDescribe        = authz.OpDescribe
	opClusterAction   = authz.OpClusterAction
	opDescribeConfigs = authz.OpDescribeConfigs
	opAlterConfigs    = authz.OpAlterConfigs
	opIdempotentWrite = authz.OpIdempotentWrite
)

func groupRes(id string) authz.Resource { return authz.Group(id) }
func txnRes(id string) authz.Resource   { return authz.TransactionalID(id) }

var clusterRes = authz.Cluster

// authorizedCluster is authorized for the cluster resource.
func (b *API) authorizedCluster(ctx *network.RequestContext, op authz.Operation) bool {
	return b.authorized(ctx, op, authz.Cluster)
}

// authorizedProduceTxn: a transactional Produce needs WRITE on its
// transactional id, else every partition fails with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func (b *API) authorizedProduceTxn(ctx *network.RequestContext, req *kmsg.ProduceRequest) bool {
	return req.TransactionID == nil || b.authorized(ctx, opWrite, txnRes(*req.TransactionID))
}

func topicRes(name string) authz.Resource { return authz.Topic(name) }

// opType is an ACL operation.
type opType = authz.Operation

// groupOps are the operations of a group, for authorizedOperations
// without an authorizer.
var groupOps = bits(3, 6, 8, 10, 11)

const topicType = authz.ResourceTopic
