package authz

import "testing"

func str(s string) *string { return &s }

// TestFilter follows Kafka's ResourcePatternFilterTest and
// AccessControlEntryFilterTest.
func TestFilter(t *testing.T) {
	b := func(typ ResourceType, name string, pt PatternType) Binding {
		return allow(Pattern{typ, name, pt}, alice, "*", OpRead)
	}
	cases := []struct {
		name   string
		filter Filter
		b      Binding
		want   bool
	}{
		{"any matches all", Filter{ResourceAny, nil, PatternAny, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "foo", PatternPrefixed), true},
		{"resource type", Filter{ResourceGroup, nil, PatternAny, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "foo", PatternLiteral), false},
		{"any pattern type needs the exact name", Filter{ResourceTopic, str("foo"), PatternAny, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "foo", PatternPrefixed), true},
		{"any pattern type, other name", Filter{ResourceTopic, str("foobar"), PatternAny, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "foo", PatternPrefixed), false},
		{"any pattern type does not expand the wildcard", Filter{ResourceTopic, str("foo"), PatternAny, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "*", PatternLiteral), false},
		{"literal filter, prefixed binding", Filter{ResourceTopic, str("foo"), PatternLiteral, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "foo", PatternPrefixed), false},
		{"literal filter of the wildcard", Filter{ResourceTopic, str("*"), PatternLiteral, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "*", PatternLiteral), true},
		{"literal filter does not expand the wildcard", Filter{ResourceTopic, str("foo"), PatternLiteral, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "*", PatternLiteral), false},
		{"match: literal", Filter{ResourceTopic, str("foo"), PatternMatch, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "foo", PatternLiteral), true},
		{"match: wildcard", Filter{ResourceTopic, str("foo"), PatternMatch, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "*", PatternLiteral), true},
		{"match: prefix", Filter{ResourceTopic, str("foo"), PatternMatch, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "fo", PatternPrefixed), true},
		{"match: longer prefix", Filter{ResourceTopic, str("foo"), PatternMatch, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "foob", PatternPrefixed), false},
		{"match: other literal", Filter{ResourceTopic, str("foo"), PatternMatch, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "fo", PatternLiteral), false},
		{"match without a name", Filter{ResourceTopic, nil, PatternMatch, nil, nil, OpAny, PermissionAny}, b(ResourceTopic, "fo", PatternPrefixed), true},
		{"principal", Filter{ResourceAny, nil, PatternAny, str(bob), nil, OpAny, PermissionAny}, b(ResourceTopic, "foo", PatternLiteral), false},
		{"host", Filter{ResourceAny, nil, PatternAny, str(alice), str("*"), OpAny, PermissionAny}, b(ResourceTopic, "foo", PatternLiteral), true},
		{"operation", Filter{ResourceAny, nil, PatternAny, nil, nil, OpWrite, PermissionAny}, b(ResourceTopic, "foo", PatternLiteral), false},
		{"permission", Filter{ResourceAny, nil, PatternAny, nil, nil, OpRead, PermissionDeny}, b(ResourceTopic, "foo", PatternLiteral), false},
	}
	for _, tc := range cases {
		if got := tc.filter.Matches(tc.b); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := allow(lit(ResourceTopic, "foo"), alice, "*", OpRead)
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid binding: %v", err)
	}
	bad := map[string]Binding{
		"any resource type":  allow(lit(ResourceAny, "foo"), alice, "*", OpRead),
		"match pattern":      allow(Pattern{ResourceTopic, "foo", PatternMatch}, alice, "*", OpRead),
		"any operation":      allow(lit(ResourceTopic, "foo"), alice, "*", OpAny),
		"any permission":     {lit(ResourceTopic, "foo"), Entry{alice, "*", OpRead, PermissionAny}},
		"empty name":         allow(lit(ResourceTopic, ""), alice, "*", OpRead),
		"other cluster name": allow(lit(ResourceCluster, "c"), alice, "*", OpAlter),
		"principal":          allow(lit(ResourceTopic, "foo"), "alice", "*", OpRead),
		"empty host":         allow(lit(ResourceTopic, "foo"), alice, "", OpRead),
	}
	for name, b := range bad {
		if b.Validate() == nil {
			t.Errorf("%s: Validate accepted %+v", name, b)
		}
	}
	if err := (Filter{ResourceTopic, nil, PatternUnknown, nil, nil, OpAny, PermissionAny}).Validate(); err == nil {
		t.Error("filter with an UNKNOWN pattern type accepted")
	}
}

func TestNames(t *testing.T) {
	if got := OpDescribeConfigs.String(); got != "DESCRIBE_CONFIGS" {
		t.Errorf("String = %q", got)
	}
	if got := ResourceTransactionalID.Name(); got != "TransactionalId" {
		t.Errorf("Name = %q", got)
	}
	for _, s := range []string{"TransactionalId", "TRANSACTIONAL_ID", "transactionalid"} {
		if r, ok := ParseResourceType(s); !ok || r != ResourceTransactionalID {
			t.Errorf("ParseResourceType(%q) = %v, %v", s, r, ok)
		}
	}
	if _, ok := ParseOperation("Any"); ok {
		t.Error("ParseOperation accepted Any")
	}
}
