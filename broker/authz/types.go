// Package authz is Kafka's ACL authorizer (StandardAuthorizer, and the ZooKeeper
// AclAuthorizer it replaced, which decide alike) as pure state: ACL bindings
// in, authorization decisions out. It does no I/O and imports no other broker
// package; the api layer hands it the request's principal and host, and the
// metadata store's ACLs whenever they change.
//
// The rules, as Kafka's:
//   - a super user (super.users) may do everything;
//   - an ACL applies to a resource when its pattern is LITERAL with the
//     resource's name or "*", or PREFIXED with a prefix of the name, and its
//     principal is the request's or "User:*", and its host is the request's
//     or "*";
//   - a matching DENY for the operation (or ALL) wins over any ALLOW;
//   - an ALLOW for the operation, for ALL, or for an operation that implies it
//     (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
//     DESCRIBE_CONFIGS) allows; implication never applies to DENY;
//   - a resource that no ACL applies to at all, for any principal, is allowed
//     only with allow.everyone.if.no.acl.found.
package authz

import (
	"fmt"
	"strings"
)

// ResourceType is Kafka's resource type code (kmsg.ACLResourceType).
type ResourceType int8

// Resource types, with Kafka's codes.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// ClusterName is the one name of the Cluster resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, and the host, that matches every one.
const Wildcard = "*"

// WildcardPrincipal is the ACL principal that matches every principal.
const WildcardPrincipal = "User:*"

// Operation is Kafka's ACL operation code (kmsg.ACLOperation).
type Operation int8

// Operations, with Kafka's codes.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

// PatternType is Kafka's resource pattern type code (kmsg.ACLResourcePatternType).
type PatternType int8

// Pattern types. ANY and MATCH exist only in filters.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Permission is Kafka's ACL permission type code (kmsg.ACLPermissionType).
type Permission int8

// Permission types. ANY exists only in filters.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

// Resource is what a request acts on.
type Resource struct {
	Type ResourceType
	Name string
}

// Topic is the topic resource called name.
func Topic(name string) Resource { return Resource{ResourceTopic, name} }

// Group is the consumer (or share) group resource with id name.
func Group(name string) Resource { return Resource{ResourceGroup, name} }

// TransactionalID is the transactional id resource name.
func TransactionalID(name string) Resource { return Resource{ResourceTransactionalID, name} }

// Cluster is the cluster resource.
var Cluster = Resource{ResourceCluster, ClusterName}

// Pattern is the resource side of an ACL binding.
type Pattern struct {
	ResourceType ResourceType
	Name         string
	PatternType  PatternType
}

// Entry is the access side of an ACL binding.
type Entry struct {
	// Principal is "Type:name", e.g. "User:alice"; "User:*" is every principal.
	Principal string
	// Host is an IP address or "*".
	Host       string
	Operation  Operation
	Permission Permission
}

// Binding is one ACL: who (Entry) may or may not do what on which resources
// (Pattern).
type Binding struct {
	Pattern
	Entry
}

// Validate returns why a binding cannot be created, with Kafka's messages
// (AclControlManager.validateNewAcl and the request checks of CreateAcls),
// or nil. The caller answers INVALID_REQUEST with the message.
func (b Binding) Validate() error {
	switch b.ResourceType {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceDelegationToken, ResourceUser:
	default:
		return fmt.Errorf("Invalid resourceType %d", b.ResourceType)
	}
	switch b.PatternType {
	case PatternLiteral, PatternPrefixed:
	default:
		return fmt.Errorf("Invalid patternType %d", b.PatternType)
	}
	if b.Operation <= OpAny || b.Operation > OpDescribeTokens {
		return fmt.Errorf("Invalid operation %d", b.Operation)
	}
	if b.Permission != PermissionAllow && b.Permission != PermissionDeny {
		return fmt.Errorf("Invalid permissionType %d", b.Permission)
	}
	if b.Name == "" {
		return fmt.Errorf("Invalid empty resource name specified")
	}
	if b.ResourceType == ResourceCluster && b.Name != ClusterName {
		return fmt.Errorf("The only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if typ, _, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" {
		return fmt.Errorf("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", b.Principal)
	}
	if b.Host == "" {
		return fmt.Errorf("Invalid empty host specified")
	}
	return nil
}
