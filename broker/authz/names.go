package authz

import "strings"

// Kafka spells its ACL enums two ways: upper case in the admin tools and
// the Java enums (TRANSACTIONAL_ID, DESCRIBE_CONFIGS), and Pascal case in
// ZooKeeper's /kafka-acl paths and JSON (TransactionalId, DescribeConfigs,
// SecurityUtils.resourceTypeName / operationName / permissionTypeName).
// The metadata store keeps the Pascal forms, as ZooKeeper does.

var resourceNames = map[ResourceType]string{
	ResourceTopic: "Topic", ResourceGroup: "Group", ResourceCluster: "Cluster",
	ResourceTransactionalID: "TransactionalId", ResourceDelegationToken: "DelegationToken", ResourceUser: "User",
}

var operationNames = map[Operation]string{
	OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create", OpDelete: "Delete",
	OpAlter: "Alter", OpDescribe: "Describe", OpClusterAction: "ClusterAction",
	OpDescribeConfigs: "DescribeConfigs", OpAlterConfigs: "AlterConfigs",
	OpIdempotentWrite: "IdempotentWrite", OpCreateTokens: "CreateTokens", OpDescribeTokens: "DescribeTokens",
}

var permissionNames = map[Permission]string{PermissionAllow: "Allow", PermissionDeny: "Deny"}

var patternNames = map[PatternType]string{PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED"}

// Name is the resource type's Pascal-case name ("TransactionalId"), "" if
// it names no concrete type.
func (t ResourceType) Name() string { return resourceNames[t] }

// Name is the operation's Pascal-case name ("DescribeConfigs").
func (o Operation) Name() string { return operationNames[o] }

// Name is the permission's Pascal-case name ("Allow").
func (p Permission) Name() string { return permissionNames[p] }

// Name is the pattern type's name ("LITERAL", "PREFIXED").
func (p PatternType) Name() string { return patternNames[p] }

// String is the upper-case name of the Java enum (TRANSACTIONAL_ID).
func (t ResourceType) String() string { return upperName(t.Name(), "UNKNOWN") }

// String is the upper-case name of the Java enum (DESCRIBE_CONFIGS).
func (o Operation) String() string { return upperName(o.Name(), "UNKNOWN") }

// String is the upper-case name of the Java enum (ALLOW).
func (p Permission) String() string { return upperName(p.Name(), "UNKNOWN") }

func upperName(pascal, unknown string) string {
	if pascal == "" {
		return unknown
	}
	var b strings.Builder
	for i, r := range pascal {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// ParseResourceType reads a Pascal-case or upper-case resource type name,
// case-insensitively; ok is false for anything else.
func ParseResourceType(s string) (ResourceType, bool) { return parse(resourceNames, s) }

// ParseOperation reads an operation name as ParseResourceType does.
func ParseOperation(s string) (Operation, bool) { return parse(operationNames, s) }

// ParsePermission reads a permission name as ParseResourceType does.
func ParsePermission(s string) (Permission, bool) { return parse(permissionNames, s) }

// ParsePatternType reads "LITERAL" or "PREFIXED", case-insensitively.
func ParsePatternType(s string) (PatternType, bool) { return parse(patternNames, s) }

func parse[K comparable](names map[K]string, s string) (K, bool) {
	norm := strings.ReplaceAll(strings.ToLower(s), "_", "")
	for k, n := range names {
		if strings.ToLower(n) == norm {
			return k, true
		}
	}
	var zero K
	return zero, false
}
