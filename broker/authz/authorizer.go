package authz

import (
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
)

// Config is the authorizer's configuration.
type Config struct {
	// SuperUsers are the principals of super.users ("User:admin"), allowed
	// everything whatever the ACLs say.
	SuperUsers []string
	// AllowIfNoACL is allow.everyone.if.no.acl.found: a resource no ACL
	// applies to is allowed to everyone (Kafka's default: false).
	AllowIfNoACL bool
}

// Authorizer decides requests against a snapshot of the ACLs. It is safe
// for concurrent use: decisions read the current snapshot without locks,
// SetACLs replaces it whole.
type Authorizer struct {
	cfg   Config
	super map[string]bool
	acls  atomic.Pointer[index]
}

// index is an immutable snapshot of the ACLs, looked up by resource.
type index struct {
	all []Binding
	// literal maps a resource type and name ("*" included) to its entries.
	literal map[Resource][]Entry
	// prefixed lists, by resource type, the prefixed patterns and their entries.
	prefixed map[ResourceType][]prefixEntry
	// byType counts the bindings of each resource type.
	byType map[ResourceType]int
}

type prefixEntry struct {
	prefix string
	entry  Entry
}

// New returns an authorizer with no ACLs.
func New(cfg Config) *Authorizer {
	a := &Authorizer{cfg: cfg, super: map[string]bool{}}
	for _, s := range cfg.SuperUsers {
		a.super[s] = true
	}
	a.SetACLs(nil)
	return a
}

// SetACLs replaces the ACLs the authorizer decides with.
func (a *Authorizer) SetACLs(bindings []Binding) {
	ix := &index{
		all:      slices.Clone(bindings),
		literal:  map[Resource][]Entry{},
		prefixed: map[ResourceType][]prefixEntry{},
		byType:   map[ResourceType]int{},
	}
	for _, b := range bindings {
		ix.byType[b.ResourceType]++
		switch b.PatternType {
		case PatternLiteral:
			r := Resource{b.ResourceType, b.Name}
			ix.literal[r] = append(ix.literal[r], b.Entry)
		case PatternPrefixed:
			ix.prefixed[b.ResourceType] = append(ix.prefixed[b.ResourceType], prefixEntry{b.Name, b.Entry})
		}
	}
	a.acls.Store(ix)
}

// ACLs returns the bindings of the current snapshot.
func (a *Authorizer) ACLs() []Binding { return slices.Clone(a.acls.Load().all) }

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.super[principal] }

// Authorize decides whether principal, connected from host (an IP
// address), may perform op on r. op is a concrete operation (not ANY or ALL).
func (a *Authorizer) Authorize(principal, host string, op Operation, r Resource) bool {
	if a.super[principal] {
		return true
	}
	ix := a.acls.Load()
	found, allowed := false, false
	check := func(e Entry) (deny bool) {
		found = true
		switch entryResult(e, principal, host, op) {
		case PermissionDeny:
			return true
		case PermissionAllow:
			allowed = true
		}
		return false
	}
	for _, name := range []string{r.Name, Wildcard} {
		for _, e := range ix.literal[Resource{r.Type, name}] {
			if check(e) {
				return false
			}
		}
		if r.Name == Wildcard {
			break
		}
	}
	for _, p := range ix.prefixed[r.Type] {
		if strings.HasPrefix(r.Name, p.prefix) && check(p.entry) {
			return false
		}
	}
	if !found {
		return a.cfg.AllowIfNoACL
	}
	return allowed
}

// entryResult is what entry e says about principal on host doing op: its
// permission if it applies, PermissionUnknown if it does not. Implied
// operations count for ALLOW entries only: a DENY of READ does not deny
// DESCRIBE.
func entryResult(e Entry, principal, host string, op Operation) Permission {
	if e.Principal != principal && e.Principal != WildcardPrincipal {
		return PermissionUnknown
	}
	if !hostMatches(e.Host, host) {
		return PermissionUnknown
	}
	if e.Operation != OpAll {
		if e.Permission == PermissionAllow {
			if !implies(e.Operation, op) {
				return PermissionUnknown
			}
		} else if e.Operation != op {
			return PermissionUnknown
		}
	}
	return e.Permission
}

// implies reports whether an ALLOW of acl grants op.
func implies(acl, op Operation) bool {
	switch op {
	case OpDescribe:
		return acl == OpDescribe || acl == OpRead || acl == OpWrite || acl == OpDelete || acl == OpAlter
	case OpDescribeConfigs:
		return acl == OpDescribeConfigs || acl == OpAlterConfigs
	}
	return acl == op
}

// hostMatches compares an ACL's host with the request's. Kafka compares
// strings (InetAddress.getHostAddress); two spellings of one IP address
// are the same host here too.
func hostMatches(aclHost, host string) bool {
	if aclHost == Wildcard || aclHost == host {
		return true
	}
	a, errA := netip.ParseAddr(aclHost)
	b, errB := netip.ParseAddr(host)
	return errA == nil && errB == nil && a.Unmap() == b.Unmap()
}

// AuthorizeByResourceType decides whether principal may perform op on at
// least one resource of type t, as Kafka's Authorizer.authorizeByResourceType
// (KIP-679: an idempotent producer needs WRITE on some topic): allowed if
// op is allowed on a hard-coded name (super users, and
// allow.everyone.if.no.acl.found with no ACL of the type at all); denied by a
// DENY on the literal "*"; else allowed if some ALLOW for exactly op (or
// ALL) is not shadowed by a DENY of the same literal name or of a prefix of
// its name.
func (a *Authorizer) AuthorizeByResourceType(principal, host string, op Operation, t ResourceType) bool {
	if a.Authorize(principal, host, op, Resource{t, "hardcode"}) {
		return true
	}
	ix := a.acls.Load()
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefix []string
	for _, b := range ix.all {
		if b.ResourceType != t || !hostMatches(b.Host, host) ||
			(b.Principal != principal && b.Principal != WildcardPrincipal) ||
			(b.Operation != op && b.Operation != OpAll) {
			continue
		}
		switch {
		case b.Permission == PermissionDeny && b.PatternType == PatternLiteral:
			if b.Name == Wildcard {
				return false
			}
			denyLiteral[b.Name] = true
		case b.Permission == PermissionDeny && b.PatternType == PatternPrefixed:
			denyPrefix[b.Name] = true
		case b.Permission == PermissionAllow && b.PatternType == PatternLiteral:
			if b.Name == Wildcard {
				return true
			}
			allowLiteral = append(allowLiteral, b.Name)
		case b.Permission == PermissionAllow && b.PatternType == PatternPrefixed:
			allowPrefix = append(allowPrefix, b.Name)
		}
	}
	shadowed := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefix[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLiteral {
		if !denyLiteral[n] && !shadowed(n) {
			return true
		}
	}
	for _, n := range allowPrefix {
		if !shadowed(n) {
			return true
		}
	}
	return false
}

// SupportedOps are the operations that apply to a resource type, as Kafka's
// AclEntry.supportedOperations: the bits of authorizedOperations.
func SupportedOps(t ResourceType) []Operation {
	switch t {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs}
	case ResourceCluster:
		return []Operation{OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe}
	case ResourceTransactionalID:
		return []Operation{OpDescribe, OpWrite}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}

// AuthorizedOps is the bit field of the operations on r that principal may
// perform (bit n for operation code n), as authorizedOperations in
// Metadata, DescribeGroups and DescribeCluster.
func (a *Authorizer) AuthorizedOps(principal, host string, r Resource) int32 {
	var v int32
	for _, op := range SupportedOps(r.Type) {
		if a.Authorize(principal, host, op, r) {
			v |= 1 << op
		}
	}
	return v
}
