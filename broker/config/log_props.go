package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker properties kept only as values: the broker defaults of topic
// configs that have no Config field (TopicConfigs reads them from
// Config.Props through brokerOr), and Kafka's thread-pool and cleaner-buffer
// sizes, which kbroker accepts and reports but has nothing to size with
// (it has a goroutine per connection and per task, and a cleaner without
// dedupe buffers). Each is validated as Kafka's ConfigDef would.

// keptInt validates an integer in [min, max] and keeps it in Props only.
func keptInt(min, max int64) func(*Config, string) error {
	return intProp(func(*Config, int64) {}, min, max)
}

// keptDouble validates a double in [min, max] and keeps it in Props only.
func keptDouble(min, max float64) func(*Config, string) error {
	return func(_ *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		if f < min || f > max {
			return fmt.Errorf("%v out of range [%v, %v]", f, min, max)
		}
		return nil
	}
}

var logProps = map[string]prop{
	"log.cleaner.delete.retention.ms":     {"86400000", kmsg.ConfigTypeLong, "How long tombstones are kept in compacted topics (default of delete.retention.ms).", keptInt(0, math.MaxInt64)},
	"log.cleaner.min.compaction.lag.ms":   {"0", kmsg.ConfigTypeLong, "The minimum time a record stays uncompacted (default of min.compaction.lag.ms).", keptInt(0, math.MaxInt64)},
	"log.cleaner.max.compaction.lag.ms":   {"9223372036854775807", kmsg.ConfigTypeLong, "The maximum time a record stays uncompacted (default of max.compaction.lag.ms).", keptInt(1, math.MaxInt64)},
	"log.cleaner.min.cleanable.ratio":     {"0.5", kmsg.ConfigTypeDouble, "The dirty ratio that makes a log eligible for cleaning (default of min.cleanable.dirty.ratio).", keptDouble(0, 1)},
	"log.message.timestamp.before.max.ms": {"9223372036854775807", kmsg.ConfigTypeLong, "How far behind the broker's clock a record's timestamp may be (default of message.timestamp.before.max.ms).", keptInt(0, math.MaxInt64)},
	"log.message.timestamp.after.max.ms":  {"3600000", kmsg.ConfigTypeLong, "How far ahead of the broker's clock a record's timestamp may be (default of message.timestamp.after.max.ms).", keptInt(0, math.MaxInt64)},
	"log.message.timestamp.type": {"CreateTime", kmsg.ConfigTypeString, "CreateTime or LogAppendTime (default of message.timestamp.type).", func(_ *Config, v string) error {
		if v != "CreateTime" && v != "LogAppendTime" {
			return fmt.Errorf("String must be one of: CreateTime, LogAppendTime")
		}
		return nil
	}},
	"log.segment.delete.delay.ms": {"60000", kmsg.ConfigTypeLong, "The time to wait before deleting a file: a deleted topic's logs, and the default of file.delete.delay.ms.", intProp(func(c *Config, v int64) { c.FileDeleteDelayMs = max(v, 1) }, 0, math.MaxInt64)},
	"log.preallocate":             {"false", kmsg.ConfigTypeBoolean, "Preallocate segment files (default of preallocate; kbroker never preallocates).", boolProp(func(*Config, bool) {})},
	"log.roll.jitter.ms":          {"", kmsg.ConfigTypeLong, "The jitter subtracted from the roll time (default of segment.jitter.ms).", keptInt(0, math.MaxInt64)},
	"log.roll.jitter.hours":       {"0", kmsg.ConfigTypeInt, "The jitter subtracted from the roll time, in hours.", keptInt(0, math.MaxInt32)},
	"log.index.size.max.bytes":    {"10485760", kmsg.ConfigTypeInt, "The maximum size of an offset index (default of segment.index.bytes).", keptInt(4, math.MaxInt32)},
	// Sizes of things kbroker does not have: accepted, reported, inert.
	"log.cleaner.threads":                 {"1", kmsg.ConfigTypeInt, "Log cleaner threads (kbroker cleans in one goroutine; accepted, no effect).", keptInt(0, math.MaxInt32)},
	"log.cleaner.dedupe.buffer.size":      {"134217728", kmsg.ConfigTypeLong, "Memory of the cleaner's dedupe buffers (accepted, no effect).", keptInt(0, math.MaxInt64)},
	"log.cleaner.io.buffer.size":          {"524288", kmsg.ConfigTypeInt, "Memory of the cleaner's I/O buffers (accepted, no effect).", keptInt(0, math.MaxInt32)},
	"log.cleaner.io.buffer.load.factor":   {"0.9", kmsg.ConfigTypeDouble, "Load factor of the cleaner's dedupe buffer (accepted, no effect).", keptDouble(0, 1)},
	"log.cleaner.io.max.bytes.per.second": {"1.7976931348623157E308", kmsg.ConfigTypeDouble, "I/O throttle of the cleaner (accepted, no effect).", keptDouble(0, math.MaxFloat64)},
	"num.io.threads":                      {"8", kmsg.ConfigTypeInt, "Request handler threads (kbroker has a goroutine per connection; accepted, no effect).", keptInt(1, math.MaxInt32)},
	"num.network.threads":                 {"3", kmsg.ConfigTypeInt, "Network threads (kbroker has a goroutine per connection; accepted, no effect).", keptInt(1, math.MaxInt32)},
	"num.recovery.threads.per.data.dir":   {"2", kmsg.ConfigTypeInt, "How many logs of each log dir are loaded (recovered after an unclean shutdown) at once at start-up, and flushed and closed at once at shutdown.", intProp(func(c *Config, v int64) { c.NumRecoveryThreadsPerDataDir = int32(v) }, 1, math.MaxInt32)},
	"background.threads":                  {"10", kmsg.ConfigTypeInt, "Background task threads (accepted, no effect).", keptInt(1, math.MaxInt32)},
}

func init() {
	for k, p := range logProps {
		props[k] = p
	}
}

// brokerOr is a topic config's default read from its broker property in
// Props (server.properties or a dynamic broker config), else def.
func brokerOr(prop, def string) func(Config) string {
	return func(c Config) string {
		if v, ok := c.Props[prop]; ok {
			return strings.TrimSpace(v)
		}
		return def
	}
}
