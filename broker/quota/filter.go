package quota

import (
	"fmt"
	"sort"
)

// Match types of DescribeClientQuotas components (KIP-546).
const (
	MatchExact     int8 = 0 // the entity's part names Match
	MatchDefault   int8 = 1 // the entity's part is the default
	MatchSpecified int8 = 2 // the entity has the part, named or default
)

// FilterComponent is one component of a DescribeClientQuotas filter.
type FilterComponent struct {
	Type      string
	MatchType int8
	Match     *string
}

// Filter selects entities for DescribeClientQuotas. Without a component
// for a part, an entity matches when it lacks that part or, unless
// Strict, whatever it has (Kafka's ZkAdminManager.describeClientQuotas).
type Filter struct {
	user, client *FilterComponent
	strict       bool
}

// ErrUnsupportedEntityType marks a filter naming an entity type kbroker
// does not know: Kafka answers UNSUPPORTED_VERSION.
type ErrUnsupportedEntityType struct{ Type string }

func (e ErrUnsupportedEntityType) Error() string {
	return fmt.Sprintf("Custom entity type '%s' not supported", e.Type)
}

// NewFilter checks a request's components; an error's message is Kafka's
// (INVALID_REQUEST, or UNSUPPORTED_VERSION for ErrUnsupportedEntityType).
func NewFilter(comps []FilterComponent, strict bool) (Filter, error) {
	f := Filter{strict: strict}
	for i := range comps {
		c := comps[i]
		switch c.MatchType {
		case MatchExact:
			if c.Match == nil {
				return Filter{}, fmt.Errorf("Unexpected null match for exact match type")
			}
		case MatchDefault, MatchSpecified:
			if c.Match != nil {
				return Filter{}, fmt.Errorf("Unexpected match for match type %d", c.MatchType)
			}
		default:
			return Filter{}, fmt.Errorf("Unexpected match type: %d", c.MatchType)
		}
		switch c.Type {
		case TypeUser:
			if f.user != nil {
				return Filter{}, fmt.Errorf("Duplicate user filter component entity type")
			}
			f.user = &c
		case TypeClientID:
			if f.client != nil {
				return Filter{}, fmt.Errorf("Duplicate client filter component entity type")
			}
			f.client = &c
		case TypeIP:
			return Filter{}, fmt.Errorf("kbroker does not support IP quotas")
		case "":
			return Filter{}, fmt.Errorf("Unexpected empty filter component entity type")
		default:
			return Filter{}, ErrUnsupportedEntityType{c.Type}
		}
	}
	return f, nil
}

func (f Filter) matchPart(c *FilterComponent, p Part) bool {
	if c == nil {
		return !p.Set || !f.strict
	}
	if !p.Set {
		return false
	}
	switch c.MatchType {
	case MatchExact:
		return !p.Default && p.Name == *c.Match
	case MatchDefault:
		return p.Default
	}
	return true
}

// Matches reports whether e is selected.
func (f Filter) Matches(e Entity) bool {
	return f.matchPart(f.user, e.User) && f.matchPart(f.client, e.Client)
}

// Described is one entity's quotas as DescribeClientQuotas returns them.
type Described struct {
	Entity Entity
	Values map[string]float64
}

// Describe returns the entities of all that f selects, in path order.
func Describe(all map[Entity]map[string]float64, f Filter) []Described {
	var out []Described
	for e, vals := range all {
		if len(vals) > 0 && f.Matches(e) {
			out = append(out, Described{e, vals})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity.Path() < out[j].Entity.Path() })
	return out
}
