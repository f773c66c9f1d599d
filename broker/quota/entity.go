// Package quota holds Kafka's client quotas as pure state: the quota
// entities (user, client id, both, and their defaults), the validation of
// AlterClientQuotas, the precedence of Kafka's ClientQuotaManager, the
// windowed rates (quota.window.num × quota.window.size.seconds) and the
// throttle time of a request that goes over. The Manager reads no clock:
// callers pass the time, so tests drive it with a fake clock. handler.go
// wraps the API handler of broker/network with it.
package quota

import (
	"fmt"
	"net/url"
	"strings"
)

// Entity types of ClientQuotaEntity.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// Quota keys (Kafka's QuotaConfigs).
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
)

// Keys are the quota keys of user and client-id entities, in Kafka's order.
var Keys = []string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}

// DescribeOrder is the order Kafka's broker lists an entity's quotas in
// (the iteration order of a java.util.HashMap of these keys): the Java
// admin client keeps it for keys that share a bucket of its own map, so
// kafka-configs --describe prints what it prints against Kafka.
var DescribeOrder = []string{RequestPercentage, ProducerByteRate, ConsumerByteRate, ControllerMutationRate}

// integral are the keys of type LONG: their values must be whole numbers.
var integral = map[string]bool{ProducerByteRate: true, ConsumerByteRate: true}

// Part is one side of an entity: absent, the default (Kafka's <default>,
// a null name on the wire), or a name.
type Part struct {
	Set     bool
	Default bool
	Name    string
}

// Named is the part naming name.
func Named(name string) Part { return Part{Set: true, Name: name} }

// DefaultPart is the part of the default entity.
var DefaultPart = Part{Set: true, Default: true}

// Entity is a quota entity: a user, a client id, or both; each part may be
// the default.
type Entity struct {
	User   Part
	Client Part
}

// defaultName is how ZooKeeper and the metadata file name a default entity.
const defaultName = "<default>"

// Sanitize is Kafka's Sanitizer.sanitize for entity names in znode paths:
// URL encoding as Java's URLEncoder, with %20 for spaces and '*' and '~'
// escaped.
func Sanitize(name string) string {
	s := url.QueryEscape(name)
	s = strings.ReplaceAll(s, "+", "%20")
	s = strings.ReplaceAll(s, "*", "%2A")
	return strings.ReplaceAll(s, "~", "%7E")
}

func (p Part) segment() string {
	if p.Default {
		return defaultName
	}
	return Sanitize(p.Name)
}

// Path is the entity's place under /config in Kafka's ZooKeeper layout,
// also the key of the metadata file: users/<u>, clients/<c>,
// users/<u>/clients/<c>, with <default> for a default part.
func (e Entity) Path() string {
	switch {
	case e.User.Set && e.Client.Set:
		return "users/" + e.User.segment() + "/clients/" + e.Client.segment()
	case e.User.Set:
		return "users/" + e.User.segment()
	default:
		return "clients/" + e.Client.segment()
	}
}

func parsePart(seg string) (Part, error) {
	if seg == defaultName {
		return DefaultPart, nil
	}
	name, err := url.PathUnescape(seg)
	if err != nil {
		return Part{}, err
	}
	return Named(name), nil
}

// ParsePath reverses Path.
func ParsePath(path string) (Entity, error) {
	segs := strings.Split(path, "/")
	var e Entity
	var err error
	switch {
	case len(segs) == 2 && segs[0] == "users":
		e.User, err = parsePart(segs[1])
	case len(segs) == 2 && segs[0] == "clients":
		e.Client, err = parsePart(segs[1])
	case len(segs) == 4 && segs[0] == "users" && segs[2] == "clients":
		if e.User, err = parsePart(segs[1]); err == nil {
			e.Client, err = parsePart(segs[3])
		}
	default:
		return Entity{}, fmt.Errorf("quota entity path %q is not users/U, clients/C or users/U/clients/C", path)
	}
	if err != nil {
		return Entity{}, fmt.Errorf("quota entity path %q: %w", path, err)
	}
	return e, nil
}

// String is the entity as kafka-configs prints it.
func (e Entity) String() string {
	var parts []string
	show := func(t string, p Part) {
		if !p.Set {
			return
		}
		n := "'" + p.Name + "'"
		if p.Default {
			n = "the default " + t
		}
		parts = append(parts, t+"="+n)
	}
	show(TypeUser, e.User)
	show(TypeClientID, e.Client)
	return strings.Join(parts, ", ")
}

// Component is one (type, name) pair of a ClientQuotaEntity as the wire
// has it; a nil Name is the default.
type Component struct {
	Type string
	Name *string
}

// EntityOf checks the components of an AlterClientQuotas entry and turns
// them into an Entity. The message of an error is the one Kafka answers
// with INVALID_REQUEST.
func EntityOf(comps []Component) (Entity, error) {
	if len(comps) == 0 {
		return Entity{}, fmt.Errorf("Invalid empty client quota entity")
	}
	var e Entity
	for _, c := range comps {
		p := DefaultPart
		if c.Name != nil {
			p = Named(*c.Name)
		}
		var dst *Part
		switch c.Type {
		case TypeUser:
			dst = &e.User
		case TypeClientID:
			dst = &e.Client
		case TypeIP:
			return Entity{}, fmt.Errorf("kbroker does not support IP quotas (connection_creation_rate)")
		default:
			return Entity{}, fmt.Errorf("Unhandled client quota entity type: %s", c.Type)
		}
		if dst.Set {
			return Entity{}, fmt.Errorf("Duplicate %s entity", c.Type)
		}
		*dst = p
	}
	return e, nil
}

// Components is e as a list of (type, name), user first.
func (e Entity) Components() []Component {
	var out []Component
	add := func(t string, p Part) {
		if !p.Set {
			return
		}
		c := Component{Type: t}
		if !p.Default {
			n := p.Name
			c.Name = &n
		}
		out = append(out, c)
	}
	add(TypeUser, e.User)
	add(TypeClientID, e.Client)
	return out
}

// ValidateValue checks one quota being set, as Kafka's
// ClientQuotaControlManager does; the message is Kafka's.
func ValidateValue(key string, value float64) error {
	known := false
	for _, k := range Keys {
		known = known || k == key
	}
	if !known {
		return fmt.Errorf("Invalid configuration key %s", key)
	}
	if !(value > 0) {
		return fmt.Errorf("Quota %s must be greater than 0", key)
	}
	if integral[key] {
		if value > 9.223372036854775807e18 {
			return fmt.Errorf("Proposed value for %s is too large for a LONG.", key)
		}
		if r := value - float64(int64(value)); r > 1e-6 || r < -1e-6 {
			return fmt.Errorf("%s cannot be a fractional value.", key)
		}
	}
	return nil
}

// ValidateKey checks a quota key being removed.
func ValidateKey(key string) error {
	for _, k := range Keys {
		if k == key {
			return nil
		}
	}
	return fmt.Errorf("Invalid configuration key %s", key)
}
