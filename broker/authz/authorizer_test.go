package authz

import (
	"testing"
)

const (
	alice = "User:alice"
	bob   = "User:bob"
	admin = "User:admin"
	host1 = "192.168.0.1"
	host2 = "10.0.0.2"
)

func lit(t ResourceType, name string) Pattern { return Pattern{t, name, PatternLiteral} }
func pre(t ResourceType, name string) Pattern { return Pattern{t, name, PatternPrefixed} }

func allow(p Pattern, principal, host string, op Operation) Binding {
	return Binding{p, Entry{principal, host, op, PermissionAllow}}
}

func deny(p Pattern, principal, host string, op Operation) Binding {
	return Binding{p, Entry{principal, host, op, PermissionDeny}}
}

// TestAuthorize covers Kafka's documented rules (docs/security.html
// "Authorization and ACLs", StandardAuthorizer): each case is a set of
// ACLs, a request and the decision.
func TestAuthorize(t *testing.T) {
	topicFoo := lit(ResourceTopic, "foo")
	cases := []struct {
		name      string
		acls      []Binding
		allowNone bool // allow.everyone.if.no.acl.found
		principal string
		host      string
		op        Operation
		res       Resource
		want      bool
	}{
		{name: "no acls denies by default", principal: alice, host: host1, op: OpRead, res: Topic("foo")},
		{name: "no acls with allow.everyone.if.no.acl.found", allowNone: true, principal: alice, host: host1, op: OpRead, res: Topic("foo"), want: true},
		{name: "super user with no acls", principal: admin, host: host1, op: OpAlter, res: Cluster, want: true},
		{name: "super user despite deny", acls: []Binding{deny(topicFoo, admin, "*", OpAll)}, principal: admin, host: host1, op: OpRead, res: Topic("foo"), want: true},
		{name: "literal allow", acls: []Binding{allow(topicFoo, alice, "*", OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foo"), want: true},
		{name: "literal allow is for that name only", acls: []Binding{allow(topicFoo, alice, "*", OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foobar")},
		{name: "allow of another operation", acls: []Binding{allow(topicFoo, alice, "*", OpRead)}, principal: alice, host: host1, op: OpWrite, res: Topic("foo")},
		{name: "allow of another principal", acls: []Binding{allow(topicFoo, alice, "*", OpRead)}, principal: bob, host: host1, op: OpRead, res: Topic("foo")},
		{name: "acls of others deny even with allow.everyone.if.no.acl.found", acls: []Binding{allow(topicFoo, alice, "*", OpRead)}, allowNone: true, principal: bob, host: host1, op: OpRead, res: Topic("foo")},
		{name: "allow.everyone.if.no.acl.found applies per resource", acls: []Binding{allow(topicFoo, alice, "*", OpRead)}, allowNone: true, principal: bob, host: host1, op: OpRead, res: Topic("bar"), want: true},
		{name: "acl of another resource type", acls: []Binding{allow(lit(ResourceGroup, "foo"), alice, "*", OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foo")},
		{name: "wildcard principal", acls: []Binding{allow(topicFoo, WildcardPrincipal, "*", OpRead)}, principal: bob, host: host1, op: OpRead, res: Topic("foo"), want: true},
		{name: "wildcard resource", acls: []Binding{allow(lit(ResourceTopic, "*"), alice, "*", OpWrite)}, principal: alice, host: host1, op: OpWrite, res: Topic("anything"), want: true},
		{name: "prefixed allow", acls: []Binding{allow(pre(ResourceTopic, "fo"), alice, "*", OpWrite)}, principal: alice, host: host1, op: OpWrite, res: Topic("foo"), want: true},
		{name: "prefixed allow of the whole name", acls: []Binding{allow(pre(ResourceTopic, "foo"), alice, "*", OpWrite)}, principal: alice, host: host1, op: OpWrite, res: Topic("foo"), want: true},
		{name: "prefix longer than the name", acls: []Binding{allow(pre(ResourceTopic, "foobar"), alice, "*", OpWrite)}, principal: alice, host: host1, op: OpWrite, res: Topic("foo")},
		{name: "prefixed deny wins over literal allow", acls: []Binding{allow(topicFoo, alice, "*", OpWrite), deny(pre(ResourceTopic, "f"), alice, "*", OpWrite)}, principal: alice, host: host1, op: OpWrite, res: Topic("foo")},
		{name: "wildcard deny wins over literal allow", acls: []Binding{allow(topicFoo, alice, "*", OpWrite), deny(lit(ResourceTopic, "*"), alice, "*", OpWrite)}, principal: alice, host: host1, op: OpWrite, res: Topic("foo")},
		{name: "deny for everyone wins", acls: []Binding{allow(topicFoo, alice, "*", OpRead), deny(topicFoo, WildcardPrincipal, "*", OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foo")},
		{name: "deny of one operation leaves the others", acls: []Binding{allow(topicFoo, alice, "*", OpAll), deny(topicFoo, alice, "*", OpRead)}, principal: alice, host: host1, op: OpWrite, res: Topic("foo"), want: true},
		{name: "deny of read does not deny describe", acls: []Binding{allow(topicFoo, alice, "*", OpAll), deny(topicFoo, alice, "*", OpRead)}, principal: alice, host: host1, op: OpDescribe, res: Topic("foo"), want: true},
		{name: "deny of all denies describe", acls: []Binding{allow(topicFoo, alice, "*", OpDescribe), deny(topicFoo, alice, "*", OpAll)}, principal: alice, host: host1, op: OpDescribe, res: Topic("foo")},
		{name: "deny on another host", acls: []Binding{allow(topicFoo, alice, "*", OpRead), deny(topicFoo, alice, host2, OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foo"), want: true},
		{name: "deny on this host", acls: []Binding{allow(topicFoo, alice, "*", OpRead), deny(topicFoo, alice, host1, OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foo")},
		{name: "allow on another host", acls: []Binding{allow(topicFoo, alice, host2, OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foo")},
		{name: "allow on this host", acls: []Binding{allow(topicFoo, alice, host1, OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foo"), want: true},
		{name: "ipv6 host in another spelling", acls: []Binding{allow(topicFoo, alice, "0:0:0:0:0:0:0:1", OpRead)}, principal: alice, host: "::1", op: OpRead, res: Topic("foo"), want: true},
		{name: "all allows every operation", acls: []Binding{allow(topicFoo, alice, "*", OpAll)}, principal: alice, host: host1, op: OpDelete, res: Topic("foo"), want: true},
		{name: "read implies describe", acls: []Binding{allow(topicFoo, alice, "*", OpRead)}, principal: alice, host: host1, op: OpDescribe, res: Topic("foo"), want: true},
		{name: "write implies describe", acls: []Binding{allow(topicFoo, alice, "*", OpWrite)}, principal: alice, host: host1, op: OpDescribe, res: Topic("foo"), want: true},
		{name: "delete implies describe", acls: []Binding{allow(topicFoo, alice, "*", OpDelete)}, principal: alice, host: host1, op: OpDescribe, res: Topic("foo"), want: true},
		{name: "alter implies describe", acls: []Binding{allow(topicFoo, alice, "*", OpAlter)}, principal: alice, host: host1, op: OpDescribe, res: Topic("foo"), want: true},
		{name: "create does not imply describe", acls: []Binding{allow(topicFoo, alice, "*", OpCreate)}, principal: alice, host: host1, op: OpDescribe, res: Topic("foo")},
		{name: "describe does not imply read", acls: []Binding{allow(topicFoo, alice, "*", OpDescribe)}, principal: alice, host: host1, op: OpRead, res: Topic("foo")},
		{name: "alter configs implies describe configs", acls: []Binding{allow(topicFoo, alice, "*", OpAlterConfigs)}, principal: alice, host: host1, op: OpDescribeConfigs, res: Topic("foo"), want: true},
		{name: "alter does not imply alter configs", acls: []Binding{allow(topicFoo, alice, "*", OpAlter)}, principal: alice, host: host1, op: OpAlterConfigs, res: Topic("foo")},
		{name: "alter does not imply describe configs", acls: []Binding{allow(topicFoo, alice, "*", OpAlter)}, principal: alice, host: host1, op: OpDescribeConfigs, res: Topic("foo")},
		{name: "deny of alter configs does not deny describe configs", acls: []Binding{allow(topicFoo, alice, "*", OpDescribeConfigs), deny(topicFoo, alice, "*", OpAlterConfigs)}, principal: alice, host: host1, op: OpDescribeConfigs, res: Topic("foo"), want: true},
		{name: "cluster acl", acls: []Binding{allow(lit(ResourceCluster, ClusterName), alice, "*", OpAlter)}, principal: alice, host: host1, op: OpAlter, res: Cluster, want: true},
		{name: "transactional id prefix", acls: []Binding{allow(pre(ResourceTransactionalID, "tx-"), alice, "*", OpWrite)}, principal: alice, host: host1, op: OpWrite, res: TransactionalID("tx-1"), want: true},
		{name: "principal types differ", acls: []Binding{allow(topicFoo, "Group:alice", "*", OpRead)}, principal: alice, host: host1, op: OpRead, res: Topic("foo")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Config{SuperUsers: []string{admin}, AllowIfNoACL: tc.allowNone})
			a.SetACLs(tc.acls)
			if got := a.Authorize(tc.principal, tc.host, tc.op, tc.res); got != tc.want {
				t.Fatalf("Authorize(%s, %s, %s, %v) = %v, want %v", tc.principal, tc.host, tc.op, tc.res, got, tc.want)
			}
		})
	}
}

// TestAuthorizeByResourceType follows Kafka's
// AuthorizerInterfaceDefaultTest/BaseAuthorizerTest cases of
// authorizeByResourceType (KIP-679).
func TestAuthorizeByResourceType(t *testing.T) {
	cases := []struct {
		name      string
		acls      []Binding
		allowNone bool
		principal string
		want      bool
	}{
		{name: "no acls", principal: alice},
		{name: "no acls with allow.everyone.if.no.acl.found", allowNone: true, principal: alice, want: true},
		{name: "super user", principal: admin, acls: []Binding{deny(lit(ResourceTopic, "*"), WildcardPrincipal, "*", OpAll)}, want: true},
		{name: "literal allow", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpWrite)}, want: true},
		{name: "allow of another principal", principal: bob, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpWrite)}},
		{name: "allow of another resource type", principal: alice, acls: []Binding{allow(lit(ResourceGroup, "foo"), alice, "*", OpWrite)}},
		{name: "implied operations do not count", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpAll), deny(lit(ResourceTopic, "foo"), alice, "*", OpWrite)}},
		{name: "allow all", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpAll)}, want: true},
		{name: "literal allow shadowed by literal deny", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpWrite), deny(lit(ResourceTopic, "foo"), alice, "*", OpWrite)}},
		{name: "literal allow shadowed by prefixed deny", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpWrite), deny(pre(ResourceTopic, "fo"), alice, "*", OpWrite)}},
		{name: "one literal allow not shadowed", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpWrite), allow(lit(ResourceTopic, "bar"), alice, "*", OpWrite), deny(pre(ResourceTopic, "fo"), alice, "*", OpWrite)}, want: true},
		{name: "prefixed allow shadowed by shorter prefixed deny", principal: alice, acls: []Binding{allow(pre(ResourceTopic, "foo"), alice, "*", OpWrite), deny(pre(ResourceTopic, "f"), alice, "*", OpWrite)}},
		{name: "prefixed allow not shadowed by longer prefixed deny", principal: alice, acls: []Binding{allow(pre(ResourceTopic, "fo"), alice, "*", OpWrite), deny(pre(ResourceTopic, "foo"), alice, "*", OpWrite)}, want: true},
		{name: "prefixed allow not shadowed by literal deny", principal: alice, acls: []Binding{allow(pre(ResourceTopic, "foo"), alice, "*", OpWrite), deny(lit(ResourceTopic, "foo"), alice, "*", OpWrite)}, want: true},
		{name: "wildcard deny", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpWrite), deny(lit(ResourceTopic, "*"), WildcardPrincipal, "*", OpWrite)}},
		{name: "wildcard allow", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "*"), alice, "*", OpWrite), deny(pre(ResourceTopic, "a"), alice, "*", OpWrite)}, want: true},
		{name: "deny on another host", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, "*", OpWrite), deny(lit(ResourceTopic, "foo"), alice, host2, OpWrite)}, want: true},
		{name: "allow on another host", principal: alice, acls: []Binding{allow(lit(ResourceTopic, "foo"), alice, host2, OpWrite)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Config{SuperUsers: []string{admin}, AllowIfNoACL: tc.allowNone})
			a.SetACLs(tc.acls)
			if got := a.AuthorizeByResourceType(tc.principal, host1, OpWrite, ResourceTopic); got != tc.want {
				t.Fatalf("AuthorizeByResourceType = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAuthorizedOps(t *testing.T) {
	a := New(Config{SuperUsers: []string{admin}})
	a.SetACLs([]Binding{
		allow(lit(ResourceTopic, "foo"), alice, "*", OpRead),
		allow(lit(ResourceTopic, "foo"), alice, "*", OpAlterConfigs),
		allow(lit(ResourceGroup, "g"), alice, "*", OpAll),
		deny(lit(ResourceGroup, "g"), alice, "*", OpDelete),
	})
	bit := func(ops ...Operation) int32 {
		var v int32
		for _, o := range ops {
			v |= 1 << o
		}
		return v
	}
	for _, tc := range []struct {
		principal string
		res       Resource
		want      int32
	}{
		{alice, Topic("foo"), bit(OpRead, OpDescribe, OpAlterConfigs, OpDescribeConfigs)},
		{alice, Group("g"), bit(OpRead, OpDescribe, OpDescribeConfigs, OpAlterConfigs)},
		{bob, Topic("foo"), 0},
		{admin, Cluster, bit(OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe)},
	} {
		if got := a.AuthorizedOps(tc.principal, host1, tc.res); got != tc.want {
			t.Errorf("AuthorizedOps(%s, %v) = %b, want %b", tc.principal, tc.res, got, tc.want)
		}
	}
}
