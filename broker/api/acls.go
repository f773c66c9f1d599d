package api

// CreateAcls (key 30), DescribeAcls (key 29) and DeleteAcls (key 31),
// versions 0–3 (v1 adds the resource pattern type, KIP-290: v0 is LITERAL
// only; v2 is flexible; v3 adds USER resources, KIP-373). As Kafka's
// AclApis: Create and Delete need ALTER on the cluster, Describe needs
// DESCRIBE; without an authorizer every request answers SECURITY_DISABLED.
// The ACLs live in the metadata store (the file store on a single node,
// /kafka-acl in ZooKeeper); this broker's authorizer reloads after each
// change, other brokers when ZooKeeper announces it.

import (
	"github.com/kbroker/kbroker/broker/authz"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const noAuthorizerMsg = "No Authorizer is configured on the broker"

func (b *API) handleCreateACLs(ctx *network.RequestContext, req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	fail := func(code int16, msg string) kmsg.Response {
		for range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, kmsg.StringPtr(msg)
			resp.Results = append(resp.Results, r)
		}
		return resp
	}
	if b.authz == nil {
		return fail(kerr.SecurityDisabled.Code, noAuthorizerMsg)
	}
	if !b.authorized(ctx, authz.OpAlter, authz.Cluster) {
		return fail(kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message)
	}
	b.aclMu.Lock()
	defer b.aclMu.Unlock()
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	var add []int
	var acls []controller.ACL
	for i, c := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		pt := authz.PatternType(c.ResourcePatternType)
		if req.Version == 0 {
			pt = authz.PatternLiteral
		}
		bd := authz.Binding{
			Pattern: authz.Pattern{ResourceType: authz.ResourceType(c.ResourceType), Name: c.ResourceName, PatternType: pt},
			Entry:   authz.Entry{Principal: c.Principal, Host: c.Host, Operation: authz.Operation(c.Operation), Permission: authz.Permission(c.PermissionType)},
		}
		if err := bd.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		add = append(add, i)
		acls = append(acls, aclOf(bd))
	}
	if len(add) == 0 {
		return resp
	}
	if err := b.store.UpdateACLs(acls, nil); err != nil {
		b.log.Error("storing ACLs", "err", err)
		for _, i := range add {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr("storing the ACLs failed: "+err.Error())
		}
		return resp
	}
	b.ReloadACLs()
	return resp
}

// filterOf converts a DescribeAcls or DeleteAcls filter; v0 filters are
// LITERAL.
func filterOf(version int16, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) authz.Filter {
	f := authz.Filter{
		ResourceType: authz.ResourceType(rt), Name: name, PatternType: authz.PatternType(pt),
		Principal: principal, Host: host, Operation: authz.Operation(op), Permission: authz.Permission(perm),
	}
	if version == 0 {
		f.PatternType = authz.PatternLiteral
	}
	return f
}

func (b *API) handleDescribeACLs(ctx *network.RequestContext, req *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if b.authz == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerMsg)
		return resp
	}
	if !b.authorized(ctx, authz.OpDescribe, authz.Cluster) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		return resp
	}
	f := filterOf(req.Version, req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return resp
	}
	byPattern := map[authz.Pattern]int{}
	for _, bd := range f.Select(b.authz.ACLs()) {
		i, ok := byPattern[bd.Pattern]
		if !ok {
			i = len(resp.Resources)
			byPattern[bd.Pattern] = i
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName = kmsg.ACLResourceType(bd.ResourceType), bd.Name
			r.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
			resp.Resources = append(resp.Resources, r)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = bd.Principal, bd.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp
}

func (b *API) handleDeleteACLs(ctx *network.RequestContext, req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	fail := func(code int16, msg string) kmsg.Response {
		for range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, kmsg.StringPtr(msg)
			resp.Results = append(resp.Results, r)
		}
		return resp
	}
	if b.authz == nil {
		return fail(kerr.SecurityDisabled.Code, noAuthorizerMsg)
	}
	if !b.authorized(ctx, authz.OpAlter, authz.Cluster) {
		return fail(kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message)
	}
	b.aclMu.Lock()
	defer b.aclMu.Unlock()
	current := bindingsOf(b.store.ACLs())
	var remove []controller.ACL
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i, rf := range req.Filters {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
		f := filterOf(req.Version, rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		if err := f.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		for _, bd := range f.Select(current) {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(bd.ResourceType), bd.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
			m.Principal, m.Host = bd.Principal, bd.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			remove = append(remove, aclOf(bd))
		}
	}
	if len(remove) == 0 {
		return resp
	}
	if err := b.store.UpdateACLs(nil, remove); err != nil {
		b.log.Error("removing ACLs", "err", err)
		for i := range resp.Results {
			if resp.Results[i].ErrorCode == 0 && len(resp.Results[i].MatchingACLs) > 0 {
				resp.Results[i].ErrorCode = kerr.UnknownServerError.Code
				resp.Results[i].ErrorMessage = kmsg.StringPtr("removing the ACLs failed: " + err.Error())
				resp.Results[i].MatchingACLs = nil
			}
		}
		return resp
	}
	b.ReloadACLs()
	return resp
}
