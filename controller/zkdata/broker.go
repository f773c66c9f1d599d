package zkdata

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// BrokerRegistrationVersion is the /brokers/ids/<id> JSON version Kafka 3.9
// writes (IBP ≥ 2.7): v4 plus "features".
const BrokerRegistrationVersion = 5

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	// Listener is the listener name, upper case (PLAINTEXT, CLIENT, REPLICATION…).
	Listener string
	Host     string
	Port     int32
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
}

// ConnectionString is Kafka's "LISTENER://host:port" form, with brackets
// around an IPv6 host.
func (e Endpoint) ConnectionString() string {
	return e.Listener + "://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// FeatureRange is a supported feature's version range (KIP-584).
type FeatureRange struct {
	MinVersion int16 `json:"min_version"`
	MaxVersion int16 `json:"max_version"`
}

// BrokerRegistration is the content of the ephemeral /brokers/ids/<id>.
type BrokerRegistration struct {
	ID        int32 // from the path, not the JSON
	Version   int
	Endpoints []Endpoint
	// Rack is broker.rack; empty means none (the key is then omitted).
	Rack      string
	JMXPort   int32
	Timestamp int64 // ms since the epoch, written as a string
	Features  map[string]FeatureRange
}

type brokerJSON struct {
	Version     int                     `json:"version"`
	Host        *string                 `json:"host"`
	Port        int32                   `json:"port"`
	Endpoints   []string                `json:"endpoints"`
	JMXPort     int32                   `json:"jmx_port"`
	Timestamp   string                  `json:"timestamp"`
	Rack        *string                 `json:"rack,omitempty"`
	ProtocolMap map[string]string       `json:"listener_security_protocol_map,omitempty"`
	Features    map[string]FeatureRange `json:"features,omitempty"`
}

// defaultProtocolMap is Kafka's listener→protocol map when a registration
// has none: each security protocol is also a listener name.
var defaultProtocolMap = map[string]string{
	"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL",
}

// Encode writes the registration as Kafka 3.9 does: top-level host and port
// of the first PLAINTEXT endpoint (null and -1 without one) for old clients,
// every endpoint, the listener → security protocol map, and features ({}
// when none).
func (b BrokerRegistration) Encode() ([]byte, error) {
	v := b.Version
	if v == 0 {
		v = BrokerRegistrationVersion
	}
	j := map[string]any{
		"version":   v,
		"host":      nil,
		"port":      -1,
		"jmx_port":  b.JMXPort,
		"timestamp": strconv.FormatInt(b.Timestamp, 10),
	}
	eps := make([]string, 0, len(b.Endpoints))
	protos := map[string]string{}
	plaintext := false
	for _, e := range b.Endpoints {
		eps = append(eps, e.ConnectionString())
		protos[e.Listener] = e.SecurityProtocol
		if !plaintext && e.SecurityProtocol == "PLAINTEXT" {
			plaintext = true
			j["host"], j["port"] = e.Host, e.Port
		}
	}
	j["endpoints"] = eps
	if b.Rack != "" && v >= 3 {
		j["rack"] = b.Rack
	}
	if v >= 4 {
		j["listener_security_protocol_map"] = protos
	}
	if v >= 5 {
		f := b.Features
		if f == nil {
			f = map[string]FeatureRange{}
		}
		j["features"] = f
	}
	return Marshal(j)
}

// DecodeBrokerRegistration parses /brokers/ids/<id>, versions 1 to 5.
func DecodeBrokerRegistration(id int32, data []byte) (BrokerRegistration, error) {
	var j brokerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return BrokerRegistration{}, fmt.Errorf("broker %d registration %q: %w", id, data, err)
	}
	b := BrokerRegistration{ID: id, Version: j.Version, JMXPort: j.JMXPort, Features: j.Features}
	if j.Rack != nil {
		b.Rack = *j.Rack
	}
	if j.Timestamp != "" {
		ts, err := strconv.ParseInt(j.Timestamp, 10, 64)
		if err != nil {
			return BrokerRegistration{}, fmt.Errorf("broker %d registration: timestamp %q: %w", id, j.Timestamp, err)
		}
		b.Timestamp = ts
	}
	switch {
	case j.Version < 1:
		return BrokerRegistration{}, fmt.Errorf("broker %d registration: unsupported version %d", id, j.Version)
	case j.Version == 1:
		if j.Host == nil {
			return BrokerRegistration{}, fmt.Errorf("broker %d registration v1 has no host", id)
		}
		b.Endpoints = []Endpoint{{Listener: "PLAINTEXT", Host: *j.Host, Port: j.Port, SecurityProtocol: "PLAINTEXT"}}
	default:
		protos := j.ProtocolMap
		if protos == nil {
			protos = defaultProtocolMap
		}
		for _, s := range j.Endpoints {
			e, err := ParseEndpoint(s, protos)
			if err != nil {
				return BrokerRegistration{}, fmt.Errorf("broker %d registration: %w", id, err)
			}
			b.Endpoints = append(b.Endpoints, e)
		}
	}
	return b, nil
}

// ParseEndpoint parses "LISTENER://host:port" ("[::1]:9092" for IPv6, an
// empty host for all interfaces) with the listener's security protocol taken
// from protos.
func ParseEndpoint(s string, protos map[string]string) (Endpoint, error) {
	name, hostPort, ok := strings.Cut(s, "://")
	if !ok || name == "" {
		return Endpoint{}, fmt.Errorf("endpoint %q is not LISTENER://host:port", s)
	}
	host, portStr, err := net.SplitHostPort(hostPort)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: %w", s, err)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: port: %w", s, err)
	}
	name = strings.ToUpper(name)
	proto, ok := protos[name]
	if !ok {
		return Endpoint{}, fmt.Errorf("endpoint %q: no security protocol for listener %s", s, name)
	}
	return Endpoint{Listener: name, Host: host, Port: int32(port), SecurityProtocol: proto}, nil
}

// Endpoint returns the broker's endpoint on the named listener.
func (b BrokerRegistration) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}
