package api

// Authorization of requests, as Kafka's AuthHelper: the handlers ask
// b.authorized(ctx, op, resource) and answer with Kafka's *_AUTHORIZATION_FAILED
// codes; the decisions are broker/authz's over the ACLs of the metadata store.
// Without authorizer.class.name b.authz is nil and everything is allowed, as
// in Kafka without an authorizer.
//
// Brokers: in cluster mode a request from another broker is allowed
// CLUSTER_ACTION (LeaderAndIsr, UpdateMetadata, StopReplica, follower
// Fetch and OffsetForLeaderEpoch, WriteTxnMarkers, AddPartitionsToTxn v4)
// without an ACL, as Kafka's brokers are super users. A request is a
// broker's when it arrives on the inter-broker listener and, if that
// listener uses SASL, its principal is User:<the inter-broker username of
// sasl.jaas.config>; on a PLAINTEXT or SSL inter-broker listener every
// connection counts, so clients must not reach it (give them listeners of
// their own). Putting the brokers' principal in super.users works too.

import (
	"net"

	"github.com/kbroker/kbroker/broker/authz"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/controller"
)

// newAuthorizer returns the authorizer cfg asks for, loaded with the
// store's ACLs, or nil without authorizer.class.name.
func (b *API) newAuthorizer() *authz.Authorizer {
	if !b.cfg.Authz.Enabled {
		return nil
	}
	a := authz.New(authz.Config{SuperUsers: b.cfg.Authz.SuperUsers, AllowIfNoACL: b.cfg.Authz.AllowEveryoneIfNoACL})
	if b.store != nil {
		a.SetACLs(bindingsOf(b.store.ACLs()))
	}
	return a
}

// ReloadACLs re-reads the ACLs from the metadata store: after
// CreateAcls/DeleteAcls, and in cluster mode whenever a broker announces a
// change in /kafka-acl-changes.
func (b *API) ReloadACLs() {
	if b.authz != nil {
		b.authz.SetACLs(bindingsOf(b.store.ACLs()))
	}
}

// AuthorizeUser reports whether principal, connecting from host, may
// perform op on r: the check of the broker's HTTP services that act as a
// Kafka principal (the Schema Registry's writes). True without an
// authorizer.
func (b *API) AuthorizeUser(principal, host string, op authz.Operation, r authz.Resource) bool {
	return b.authz == nil || b.authz.Authorize(principal, host, op, r)
}

// authorized reports whether the request's principal may perform op on r.
func (b *API) authorized(ctx *network.RequestContext, op authz.Operation, r authz.Resource) bool {
	if b.authz == nil {
		return true
	}
	if op == authz.OpClusterAction && r.Type == authz.ResourceCluster && b.fromBroker(ctx) {
		return true
	}
	return b.authz.Authorize(ctx.Principal, remoteHost(ctx), op, r)
}

// authorizedTopic is authorized for a topic.
func (b *API) authorizedTopic(ctx *network.RequestContext, op authz.Operation, topic string) bool {
	return b.authz == nil || b.authorized(ctx, op, authz.Topic(topic))
}

// authorizedByType reports whether the principal may perform op on some
// resource of type t (KIP-679: an idempotent producer needs WRITE on a topic).
func (b *API) authorizedByType(ctx *network.RequestContext, op authz.Operation, t authz.ResourceType) bool {
	if b.authz == nil {
		return true
	}
	return b.authz.AuthorizeByResourceType(ctx.Principal, remoteHost(ctx), op, t)
}

// authorizedOpsOf is the authorizedOperations field for r: Kafka's "not
// requested" value, every operation of the type without an authorizer
// (the bits the API had before, def), else the principal's.
func (b *API) authorizedOpsOf(ctx *network.RequestContext, requested bool, def int32, r authz.Resource) int32 {
	if !requested {
		return authzOmitted
	}
	if b.authz == nil {
		return def
	}
	ops := b.authz.AuthorizedOps(ctx.Principal, remoteHost(ctx), r)
	if r.Type == authz.ResourceCluster && b.fromBroker(ctx) {
		ops |= 1 << authz.OpClusterAction
	}
	return ops
}

// fromBroker reports a request of another broker of the cluster: on the
// inter-broker listener, with the brokers' SASL principal if it uses SASL.
func (b *API) fromBroker(ctx *network.RequestContext) bool {
	if b.cluster == nil || ctx.Listener.Name != b.cluster.Listener {
		return false
	}
	ib := b.cfg.InterBroker
	return ib.Mechanism == "" || ctx.Principal == "User:"+ib.Username
}

// remoteHost is the client's IP address, as ACL hosts name it.
func remoteHost(ctx *network.RequestContext) string {
	if h, _, err := net.SplitHostPort(ctx.RemoteAddr); err == nil {
		return h
	}
	return ctx.RemoteAddr
}

// bindingsOf converts the store's ACLs; one the authorizer cannot read
// (written by a newer Kafka) is left out.
func bindingsOf(acls []controller.ACL) []authz.Binding {
	out := make([]authz.Binding, 0, len(acls))
	for _, a := range acls {
		if b, ok := bindingOf(a); ok {
			out = append(out, b)
		}
	}
	return out
}

func bindingOf(a controller.ACL) (authz.Binding, bool) {
	rt, ok1 := authz.ParseResourceType(a.ResourceType)
	pt, ok2 := authz.ParsePatternType(a.PatternType)
	op, ok3 := authz.ParseOperation(a.Operation)
	perm, ok4 := authz.ParsePermission(a.Permission)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return authz.Binding{}, false
	}
	return authz.Binding{
		Pattern: authz.Pattern{ResourceType: rt, Name: a.Name, PatternType: pt},
		Entry:   authz.Entry{Principal: a.Principal, Host: a.Host, Operation: op, Permission: perm},
	}, true
}

func aclOf(b authz.Binding) controller.ACL {
	return controller.ACL{
		ResourceType: b.ResourceType.Name(), Name: b.Name, PatternType: b.PatternType.Name(),
		Principal: b.Principal, Host: b.Host, Operation: b.Operation.Name(), Permission: b.Permission.Name(),
	}
}
