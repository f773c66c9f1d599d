// Package groupconfig defines Kafka 4's group configs (ConfigResource type
// GROUP; KIP-848 consumer groups and KIP-932 share groups): their names,
// types, documentation and broker-level defaults, and Kafka's validation of a
// group's overrides against the broker's bounds (group.consumer.min/max.*,
// group.share.min/max.*). Both the consumer and the share coordinator read a
// group's effective values from here, so the table exists once.
package groupconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The group config names, as Kafka's GroupConfig.
const (
	ConsumerSessionTimeoutMs    = "consumer.session.timeout.ms"
	ConsumerHeartbeatIntervalMs = "consumer.heartbeat.interval.ms"
	ShareSessionTimeoutMs       = "share.session.timeout.ms"
	ShareHeartbeatIntervalMs    = "share.heartbeat.interval.ms"
	ShareRecordLockDurationMs   = "share.record.lock.duration.ms"
	ShareAutoOffsetReset        = "share.auto.offset.reset"
	ShareDeliveryCountLimit     = "share.delivery.count.limit"
	ShareIsolationLevel         = "share.isolation.level"
)

// Type is a config's type as DescribeConfigs reports it (Kafka's
// ConfigDef.Type, numbered as in DescribeConfigsResponse v3+).
type Type int8

// The types group configs use.
const (
	TypeString Type = 2
	TypeInt    Type = 3
)

// Def is one group config.
type Def struct {
	Name string
	Type Type
	Doc  string
	// oneOf lists the allowed values of a string config.
	oneOf []string
}

var defs = []Def{
	{Name: ConsumerHeartbeatIntervalMs, Type: TypeInt, Doc: "The heartbeat interval given to the members of a consumer group (KIP-848)."},
	{Name: ConsumerSessionTimeoutMs, Type: TypeInt, Doc: "The timeout to detect client failures when using the consumer group protocol."},
	{Name: ShareAutoOffsetReset, Type: TypeString, Doc: "The strategy to initialize the share-partition start offset.", oneOf: []string{"latest", "earliest"}},
	{Name: ShareDeliveryCountLimit, Type: TypeInt, Doc: "The maximum number of delivery attempts for a record delivered to a share group."},
	{Name: ShareHeartbeatIntervalMs, Type: TypeInt, Doc: "The heartbeat interval given to the members of a share group."},
	{Name: ShareIsolationLevel, Type: TypeString, Doc: "Whether a share group reads only committed transactional records.", oneOf: []string{"read_committed", "read_uncommitted"}},
	{Name: ShareRecordLockDurationMs, Type: TypeInt, Doc: "The record acquisition lock duration in milliseconds for share groups."},
	{Name: ShareSessionTimeoutMs, Type: TypeInt, Doc: "The timeout to detect client failures when using the share group protocol."},
}

// Defs lists every group config, sorted by name.
func Defs() []Def { return slices.Clone(defs) }

// Lookup finds a group config by name.
func Lookup(name string) (Def, bool) {
	for _, d := range defs {
		if d.Name == name {
			return d, true
		}
	}
	return Def{}, false
}

// Broker holds the broker properties that give group configs their
// defaults and bounds. Start from DefaultBroker.
type Broker struct {
	// group.consumer.{session.timeout,heartbeat.interval}.ms and their
	// group.consumer.{min,max}.* bounds.
	ConsumerSessionTimeoutMs, ConsumerMinSessionTimeoutMs, ConsumerMaxSessionTimeoutMs          int32
	ConsumerHeartbeatIntervalMs, ConsumerMinHeartbeatIntervalMs, ConsumerMaxHeartbeatIntervalMs int32
	// group.share.* likewise.
	ShareSessionTimeoutMs, ShareMinSessionTimeoutMs, ShareMaxSessionTimeoutMs          int32
	ShareHeartbeatIntervalMs, ShareMinHeartbeatIntervalMs, ShareMaxHeartbeatIntervalMs int32
	// group.share.{,min.,max.}record.lock.duration.ms.
	ShareRecordLockDurationMs, ShareMinRecordLockDurationMs, ShareMaxRecordLockDurationMs int32
	// group.share.delivery.count.limit.
	ShareDeliveryCountLimit int32
}

// DefaultBroker returns Kafka 4's defaults.
func DefaultBroker() Broker {
	return Broker{
		ConsumerSessionTimeoutMs: 45000, ConsumerMinSessionTimeoutMs: 45000, ConsumerMaxSessionTimeoutMs: 60000,
		ConsumerHeartbeatIntervalMs: 5000, ConsumerMinHeartbeatIntervalMs: 5000, ConsumerMaxHeartbeatIntervalMs: 15000,
		ShareSessionTimeoutMs: 45000, ShareMinSessionTimeoutMs: 45000, ShareMaxSessionTimeoutMs: 60000,
		ShareHeartbeatIntervalMs: 5000, ShareMinHeartbeatIntervalMs: 5000, ShareMaxHeartbeatIntervalMs: 15000,
		ShareRecordLockDurationMs: 30000, ShareMinRecordLockDurationMs: 15000, ShareMaxRecordLockDurationMs: 60000,
		ShareDeliveryCountLimit: 5,
	}
}

// Default is the value a group config has without an override.
func (b Broker) Default(name string) string {
	i := func(v int32) string { return strconv.Itoa(int(v)) }
	switch name {
	case ConsumerSessionTimeoutMs:
		return i(b.ConsumerSessionTimeoutMs)
	case ConsumerHeartbeatIntervalMs:
		return i(b.ConsumerHeartbeatIntervalMs)
	case ShareSessionTimeoutMs:
		return i(b.ShareSessionTimeoutMs)
	case ShareHeartbeatIntervalMs:
		return i(b.ShareHeartbeatIntervalMs)
	case ShareRecordLockDurationMs:
		return i(b.ShareRecordLockDurationMs)
	case ShareDeliveryCountLimit:
		return i(b.ShareDeliveryCountLimit)
	case ShareAutoOffsetReset:
		return "latest"
	case ShareIsolationLevel:
		return "read_uncommitted"
	}
	return ""
}

// Values are a group's effective configs.
type Values struct {
	ConsumerSessionTimeoutMs, ConsumerHeartbeatIntervalMs int32
	ShareSessionTimeoutMs, ShareHeartbeatIntervalMs       int32
	ShareRecordLockDurationMs, ShareDeliveryCountLimit    int32
	ShareAutoOffsetReset, ShareIsolationLevel             string
}

// Effective merges overrides over the broker's defaults. Overrides were
// validated when set; one that does not parse falls back to the default.
func (b Broker) Effective(overrides map[string]string) Values {
	get := func(name string) string {
		if v, ok := overrides[name]; ok {
			return v
		}
		return b.Default(name)
	}
	num := func(name string) int32 {
		v, err := strconv.ParseInt(get(name), 10, 32)
		if err != nil {
			v, _ = strconv.ParseInt(b.Default(name), 10, 32)
		}
		return int32(v)
	}
	return Values{
		ConsumerSessionTimeoutMs:    num(ConsumerSessionTimeoutMs),
		ConsumerHeartbeatIntervalMs: num(ConsumerHeartbeatIntervalMs),
		ShareSessionTimeoutMs:       num(ShareSessionTimeoutMs),
		ShareHeartbeatIntervalMs:    num(ShareHeartbeatIntervalMs),
		ShareRecordLockDurationMs:   num(ShareRecordLockDurationMs),
		ShareDeliveryCountLimit:     num(ShareDeliveryCountLimit),
		ShareAutoOffsetReset:        get(ShareAutoOffsetReset),
		ShareIsolationLevel:         get(ShareIsolationLevel),
	}
}

// Validate checks a group's complete set of overrides as Kafka's
// GroupConfig.validate does: every name known, every value of its type and
// within the broker's bounds, and each session timeout greater than its
// heartbeat interval. The error text is Kafka's INVALID_CONFIG message.
func (b Broker) Validate(overrides map[string]string) error {
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		d, ok := Lookup(n)
		if !ok {
			return fmt.Errorf("Unknown group config name: %s", n)
		}
		v := overrides[n]
		switch d.Type {
		case TypeInt:
			x, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, n)
			}
			if x < 1 {
				return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 1", v, n)
			}
		case TypeString:
			if !slices.Contains(d.oneOf, v) {
				return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: %s", v, n, strings.Join(d.oneOf, ", "))
			}
		}
	}
	e := b.Effective(overrides)
	for _, c := range []struct {
		v      int32
		name   string
		lo, hi int32
	}{
		{e.ConsumerHeartbeatIntervalMs, ConsumerHeartbeatIntervalMs, b.ConsumerMinHeartbeatIntervalMs, b.ConsumerMaxHeartbeatIntervalMs},
		{e.ConsumerSessionTimeoutMs, ConsumerSessionTimeoutMs, b.ConsumerMinSessionTimeoutMs, b.ConsumerMaxSessionTimeoutMs},
		{e.ShareHeartbeatIntervalMs, ShareHeartbeatIntervalMs, b.ShareMinHeartbeatIntervalMs, b.ShareMaxHeartbeatIntervalMs},
		{e.ShareSessionTimeoutMs, ShareSessionTimeoutMs, b.ShareMinSessionTimeoutMs, b.ShareMaxSessionTimeoutMs},
		{e.ShareRecordLockDurationMs, ShareRecordLockDurationMs, b.ShareMinRecordLockDurationMs, b.ShareMaxRecordLockDurationMs},
		{e.ShareDeliveryCountLimit, ShareDeliveryCountLimit, 2, 10},
	} {
		// Kafka 4.4.0's message (4.0 named the bounding property instead).
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%s must be in the range %d to %d inclusive.", c.name, c.lo, c.hi)
		}
	}
	if e.ConsumerSessionTimeoutMs <= e.ConsumerHeartbeatIntervalMs {
		return fmt.Errorf("%s must be greater than %s", ConsumerSessionTimeoutMs, ConsumerHeartbeatIntervalMs)
	}
	if e.ShareSessionTimeoutMs <= e.ShareHeartbeatIntervalMs {
		return fmt.Errorf("%s must be greater than %s", ShareSessionTimeoutMs, ShareHeartbeatIntervalMs)
	}
	return nil
}
