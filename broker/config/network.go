package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// NetworkLimits are the limits of the network edge (broker/network) and of
// fetch responses: what bounds the memory and the connections any client can
// take, whatever it sends.
type NetworkLimits struct {
	// QueuedMaxRequestBytes is queued.max.request.bytes: the bytes of
	// requests read but not yet answered, across all connections (Kafka's
	// memory pool); ≤ 0 is unbounded. Kafka's default is -1; kbroker's is
	// DefaultQueuedMaxRequestBytes, so that no set of clients can make the
	// broker hold more request memory than that.
	QueuedMaxRequestBytes int64
	// MaxConnections is max.connections: open connections across all
	// listeners; a new connection over it is closed at once.
	MaxConnections int32
	// MaxConnectionsPerIP is max.connections.per.ip: open connections from
	// one address; a new connection over it is closed at once.
	MaxConnectionsPerIP int32
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides:
	// per host or address limits ("host:count,10.0.0.1:count").
	MaxConnectionsPerIPOverrides map[string]int32
	// ConnectionsMaxIdleMs is connections.max.idle.ms: a connection with no
	// bytes read and no request in flight for this long is closed; < 0 never.
	ConnectionsMaxIdleMs int64
	// FetchMaxBytes is fetch.max.bytes: the most one Fetch response holds,
	// whatever the client asks (still at least one batch).
	FetchMaxBytes int32
}

// DefaultQueuedMaxRequestBytes is kbroker's queued.max.request.bytes
// (Kafka: -1, unbounded): 512 MiB, five frames of socket.request.max.bytes.
const DefaultQueuedMaxRequestBytes = 512 << 20

// networkProps are the properties of NetworkLimits, with Kafka's defaults
// (but queued.max.request.bytes); init adds them to props.
var networkProps = map[string]prop{
	"queued.max.request.bytes": {strconv.Itoa(DefaultQueuedMaxRequestBytes), kmsg.ConfigTypeLong, "The bytes of requests queued and not yet answered, across all connections.", intProp(func(c *Config, v int64) { c.QueuedMaxRequestBytes = v }, -1, math.MaxInt64)},
	"max.connections":          {"2147483647", kmsg.ConfigTypeInt, "The most connections the broker accepts across all listeners.", intProp(func(c *Config, v int64) { c.MaxConnections = int32(v) }, 0, math.MaxInt32)},
	"max.connections.per.ip":   {"2147483647", kmsg.ConfigTypeInt, "The most connections the broker accepts from one address.", intProp(func(c *Config, v int64) { c.MaxConnectionsPerIP = int32(v) }, 0, math.MaxInt32)},
	"max.connections.per.ip.overrides": {"", kmsg.ConfigTypeString, "Per-host or per-address overrides of max.connections.per.ip (host:count, comma-separated).", func(c *Config, v string) (err error) {
		c.MaxConnectionsPerIPOverrides, err = parseConnectionOverrides(v)
		return err
	}},
	"connections.max.idle.ms": {"600000", kmsg.ConfigTypeLong, "Idle connections are closed after this many ms.", intProp(func(c *Config, v int64) { c.ConnectionsMaxIdleMs = v }, math.MinInt64, math.MaxInt64)},
	"fetch.max.bytes":         {"57671680", kmsg.ConfigTypeInt, "The most bytes one Fetch response holds.", intProp(func(c *Config, v int64) { c.FetchMaxBytes = int32(v) }, 1, math.MaxInt32)},
}

func init() {
	for k, p := range networkProps {
		props[k] = p
	}
}

// parseConnectionOverrides parses "host:count,host:count" (the count after
// the last colon, so IPv6 addresses work).
func parseConnectionOverrides(v string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, e := range SplitList(v) {
		i := strings.LastIndex(e, ":")
		if i <= 0 {
			return nil, fmt.Errorf("override %q is not host:count", e)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(e[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("override %q has no valid count", e)
		}
		out[strings.Trim(strings.TrimSpace(e[:i]), "[]")] = int32(n)
	}
	return out, nil
}
