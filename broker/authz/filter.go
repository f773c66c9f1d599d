package authz

import "strings"

// Filter selects bindings, as DescribeAcls and DeleteAcls send it (Kafka's
// AclBindingFilter). A nil string matches anything; ANY matches any value
// of its enum.
type Filter struct {
	ResourceType ResourceType
	Name         *string
	// PatternType ANY matches every pattern type with exactly Name; MATCH
	// matches the patterns that would apply to a resource named Name
	// (LITERAL Name, LITERAL "*", PREFIXED prefixes of Name).
	PatternType PatternType
	Principal   *string
	Host        *string
	Operation   Operation
	Permission  Permission
}

// Validate reports a filter that has an UNKNOWN element, which Kafka
// refuses with INVALID_REQUEST.
func (f Filter) Validate() error {
	if f.ResourceType == ResourceUnknown || f.PatternType == PatternUnknown ||
		f.Operation == OpUnknown || f.Permission == PermissionUnknown ||
		f.ResourceType > ResourceUser || f.PatternType > PatternPrefixed ||
		f.Operation > OpDescribeTokens || f.Permission > PermissionAllow ||
		f.ResourceType < 0 || f.PatternType < 0 || f.Operation < 0 || f.Permission < 0 {
		return errUnknownFilter
	}
	return nil
}

type filterError string

func (e filterError) Error() string { return string(e) }

const errUnknownFilter = filterError("Filter contain UNKNOWN elements")

// Matches reports whether b is selected by f.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b.Pattern) && f.matchesEntry(b.Entry)
}

func (f Filter) matchesPattern(p Pattern) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != p.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != p.PatternType {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.PatternType == PatternAny || f.PatternType == p.PatternType {
		return *f.Name == p.Name
	}
	// MATCH
	switch p.PatternType {
	case PatternLiteral:
		return *f.Name == p.Name || p.Name == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(*f.Name, p.Name)
	}
	return false
}

func (f Filter) matchesEntry(e Entry) bool {
	return (f.Principal == nil || *f.Principal == e.Principal) &&
		(f.Host == nil || *f.Host == e.Host) &&
		(f.Operation == OpAny || f.Operation == e.Operation) &&
		(f.Permission == PermissionAny || f.Permission == e.Permission)
}

// Select returns the bindings of bs that f matches, in order.
func (f Filter) Select(bs []Binding) []Binding {
	var out []Binding
	for _, b := range bs {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}
