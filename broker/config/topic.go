package config

import (
	"fmt"

	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicConfigDef describes one topic-level config: its Kafka name, the broker
// property that supplies its default, and how to check a value.
type TopicConfigDef struct {
	Name       string
	BrokerProp string // "" when the default is fixed
	Type       kmsg.ConfigType
	Default    func(c Config) string
	Doc        string
}

func fixed(v string) func(Config) string { return func(Config) string { return v } }
func i64(v int64) string                 { return strconv.FormatInt(v, 10) }

// TopicConfigs is the catalog of topic configs, Kafka's names and defaults.
var TopicConfigs = []TopicConfigDef{
	{"cleanup.policy", "log.cleanup.policy", kmsg.ConfigTypeList, func(c Config) string { return c.LogCleanupPolicy }, "delete or compact or both"},
	{"compression.type", "compression.type", kmsg.ConfigTypeString, func(c Config) string { return c.CompressionType }, "final compression type for the topic"},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms", kmsg.ConfigTypeLong, brokerOr("log.cleaner.delete.retention.ms", "86400000"), "how long tombstones are kept for compacted topics"},
	{"file.delete.delay.ms", "log.segment.delete.delay.ms", kmsg.ConfigTypeLong, brokerOr("log.segment.delete.delay.ms", "60000"), "time to wait before deleting a file"},
	{"flush.messages", "log.flush.interval.messages", kmsg.ConfigTypeLong, func(c Config) string { return i64(c.LogFlushIntervalMessages) }, "fsync after this many messages"},
	{"flush.ms", "log.flush.interval.ms", kmsg.ConfigTypeLong, func(c Config) string { return i64(c.LogFlushIntervalMs) }, "fsync after this much time"},
	{"index.interval.bytes", "log.index.interval.bytes", kmsg.ConfigTypeInt, func(c Config) string { return i64(int64(c.LogIndexIntervalBytes)) }, "bytes between offset index entries"},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", kmsg.ConfigTypeLong, brokerOr("log.cleaner.max.compaction.lag.ms", i64(math.MaxInt64)), "maximum time a message stays uncompacted"},
	{"max.message.bytes", "message.max.bytes", kmsg.ConfigTypeInt, func(c Config) string { return i64(int64(c.MessageMaxBytes)) }, "largest record batch size allowed"},
	{"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", kmsg.ConfigTypeLong, brokerOr("log.message.timestamp.after.max.ms", "3600000"), "allowed timestamp lead over broker time"},
	{"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", kmsg.ConfigTypeLong, brokerOr("log.message.timestamp.before.max.ms", i64(math.MaxInt64)), "allowed timestamp lag behind broker time"},
	{"message.timestamp.type", "log.message.timestamp.type", kmsg.ConfigTypeString, brokerOr("log.message.timestamp.type", "CreateTime"), "CreateTime or LogAppendTime"},
	{"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", kmsg.ConfigTypeDouble, brokerOr("log.cleaner.min.cleanable.ratio", "0.5"), "dirty ratio that triggers compaction"},
	{"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", kmsg.ConfigTypeLong, brokerOr("log.cleaner.min.compaction.lag.ms", "0"), "minimum time a message stays uncompacted"},
	{"min.insync.replicas", "min.insync.replicas", kmsg.ConfigTypeInt, func(c Config) string { return i64(int64(c.MinInsyncReplicas)) }, "replicas that must acknowledge acks=all"},
	{"preallocate", "log.preallocate", kmsg.ConfigTypeBoolean, brokerOr("log.preallocate", "false"), "preallocate segment files"},
	{"retention.bytes", "log.retention.bytes", kmsg.ConfigTypeLong, func(c Config) string { return i64(c.LogRetentionBytes) }, "maximum partition size before old segments are deleted"},
	{"retention.ms", "log.retention.ms", kmsg.ConfigTypeLong, func(c Config) string { return i64(c.LogRetentionMs) }, "maximum age of a segment before deletion"},
	{"segment.bytes", "log.segment.bytes", kmsg.ConfigTypeInt, func(c Config) string { return i64(c.LogSegmentBytes) }, "segment file size"},
	{"segment.index.bytes", "log.index.size.max.bytes", kmsg.ConfigTypeInt, brokerOr("log.index.size.max.bytes", "10485760"), "offset index size"},
	{"segment.jitter.ms", "log.roll.jitter.ms", kmsg.ConfigTypeLong, brokerOr("log.roll.jitter.ms", "0"), "random jitter subtracted from segment.ms"},
	{"segment.ms", "log.roll.ms", kmsg.ConfigTypeLong, func(c Config) string { return i64(c.LogRollMs) }, "time after which a segment is rolled"},
	{"unclean.leader.election.enable", "unclean.leader.election.enable", kmsg.ConfigTypeBoolean, fixed("false"), "allow out-of-sync replicas to become leader"},
}

// Subject name strategies of broker-side schema validation: Confluent's
// class names (the short names are accepted as well).
const (
	TopicNameStrategy       = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	RecordNameStrategy      = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	TopicRecordNameStrategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
)

// ConfluentTopicConfigs are Confluent Server's topic configs that kbroker
// implements: broker-side schema validation. They are not Kafka's, so
// DescribeConfigs lists them only for a topic that sets them, and
// CreateTopics answers do not list them: everyone else sees Kafka's
// catalog.
var ConfluentTopicConfigs = []TopicConfigDef{
	{"confluent.key.schema.validation", "", kmsg.ConfigTypeBoolean, fixed("false"), "reject produced records whose key does not carry the id of a schema registered under the key subject"},
	{"confluent.value.schema.validation", "", kmsg.ConfigTypeBoolean, fixed("false"), "reject produced records whose value does not carry the id of a schema registered under the value subject"},
	{"confluent.key.subject.name.strategy", "", kmsg.ConfigTypeString, fixed(TopicNameStrategy), "how the key subject is named: TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy"},
	{"confluent.value.subject.name.strategy", "", kmsg.ConfigTypeString, fixed(TopicNameStrategy), "how the value subject is named: TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy"},
}

// SubjectNameStrategy is the class name of a strategy given by class or
// short name, and whether it is one.
func SubjectNameStrategy(v string) (string, bool) {
	v = strings.TrimSpace(v)
	for _, s := range []string{TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy} {
		if v == s || "io.confluent.kafka.serializers.subject."+v == s {
			return s, true
		}
	}
	return "", false
}

func TopicConfigDefByName(name string) (TopicConfigDef, bool) {
	for _, defs := range [][]TopicConfigDef{TopicConfigs, ConfluentTopicConfigs} {
		for _, d := range defs {
			if d.Name == name {
				return d, true
			}
		}
	}
	return TopicConfigDef{}, false
}

// ValidateTopicConfigs checks names and values the way CreateTopics and
// AlterConfigs must (INVALID_CONFIG naming the key, in Kafka's words:
// "Invalid value V for configuration K: reason").
func ValidateTopicConfigs(cfgs map[string]string) error {
	names := make([]string, 0, len(cfgs))
	for k := range cfgs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		d, ok := TopicConfigDefByName(k)
		if !ok {
			return fmt.Errorf("Unknown topic config name: %s", k)
		}
		if err := checkConfigValue(d, cfgs[k]); err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: %v", cfgs[k], k, err)
		}
	}
	return nil
}

// checkConfigValue returns Kafka's ConfigDef message for an invalid value
// (its parse errors and validators' texts, which tools print to users).
func checkConfigValue(d TopicConfigDef, v string) error {
	switch d.Type {
	case kmsg.ConfigTypeInt, kmsg.ConfigTypeLong:
		bits, what := 64, "LONG"
		if d.Type == kmsg.ConfigTypeInt {
			bits, what = 32, "INT"
		}
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits); err != nil {
			return fmt.Errorf("Not a number of type %s", what)
		}
	case kmsg.ConfigTypeDouble:
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			return fmt.Errorf("Not a number of type DOUBLE")
		}
	case kmsg.ConfigTypeBoolean:
		if l := strings.ToLower(strings.TrimSpace(v)); l != "true" && l != "false" {
			return fmt.Errorf("Expected value to be either true or false")
		}
	}
	switch d.Name {
	case "cleanup.policy":
		for _, p := range SplitList(v) {
			if p != "delete" && p != "compact" {
				return fmt.Errorf("String must be one of: compact, delete")
			}
		}
	case "compression.type":
		switch v {
		case "producer", "uncompressed", "gzip", "snappy", "lz4", "zstd":
		default:
			return fmt.Errorf("String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer")
		}
	case "message.timestamp.type":
		if v != "CreateTime" && v != "LogAppendTime" {
			return fmt.Errorf("String must be one of: CreateTime, LogAppendTime")
		}
	case "confluent.key.subject.name.strategy", "confluent.value.subject.name.strategy":
		if _, ok := SubjectNameStrategy(v); !ok {
			return fmt.Errorf("String must be one of: TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy")
		}
	case "segment.bytes":
		if n, _ := strconv.ParseInt(v, 10, 64); n < 14 {
			return fmt.Errorf("Value must be at least 14")
		}
	}
	return nil
}

// ResolvedConfig is a topic's effective configs with where each came from.
type ResolvedConfig struct {
	Values    map[string]string
	Overrides map[string]string
}

func ResolveTopicConfig(c Config, overrides map[string]string) ResolvedConfig {
	r := ResolvedConfig{Values: make(map[string]string, len(TopicConfigs)+len(ConfluentTopicConfigs)), Overrides: overrides}
	for _, defs := range [][]TopicConfigDef{TopicConfigs, ConfluentTopicConfigs} {
		for _, d := range defs {
			r.Values[d.Name] = d.Default(c)
			if v, ok := overrides[d.Name]; ok {
				r.Values[d.Name] = v
			}
		}
	}
	return r
}

func (r ResolvedConfig) Int64(name string) int64 {
	n, _ := strconv.ParseInt(r.Values[name], 10, 64)
	return n
}

// ConfigSource says where a topic config's effective value comes from.
func ConfigSource(r ResolvedConfig, d TopicConfigDef) int8 {
	if _, ok := r.Overrides[d.Name]; ok {
		return int8(kmsg.ConfigSourceDynamicTopicConfig)
	}
	return int8(kmsg.ConfigSourceDefaultConfig)
}
