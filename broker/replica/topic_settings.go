package replica

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
)

// TopicSettings are a topic's configs resolved for the paths that use them
// (produce validation, compression, retention, compaction). A value is never
// modified: an AlterConfigs stores a new one, so readers need no lock.
type TopicSettings struct {
	// MaxMessageBytes is max.message.bytes.
	MaxMessageBytes int
	// Validate holds the configs produce validation depends on (NowMs unset).
	Validate records.ValidateOptions
	// Recompress is set when compression.type names a codec (not
	// "producer"): batches arriving in another codec are rebuilt in codec.
	Recompress bool
	Codec      records.Codec
	// MinInsyncReplicas is min.insync.replicas.
	MinInsyncReplicas int32
	// KeySchema and ValueSchema are broker-side schema validation
	// (confluent.{key,value}.schema.validation and their subject name
	// strategies).
	KeySchema, ValueSchema SchemaValidation
	// CleanupDelete and cleanupCompact come from cleanup.policy.
	CleanupDelete, cleanupCompact bool
	// retentionMs and retentionBytes are retention.ms and retention.bytes (-1: none).
	retentionMs, retentionBytes int64
	// cleaner holds delete.retention.ms, min.compaction.lag.ms and min.cleanable.dirty.ratio.
	cleaner storage.CleanerConfig
}

// SchemaValidation is one side's broker-side schema validation.
type SchemaValidation struct {
	On       bool
	Strategy string // a config.*Strategy class name
}

func schemaValidation(rc config.ResolvedConfig, side string) SchemaValidation {
	strategy, _ := config.SubjectNameStrategy(rc.Values["confluent."+side+".subject.name.strategy"])
	return SchemaValidation{
		On:       strings.EqualFold(strings.TrimSpace(rc.Values["confluent."+side+".schema.validation"]), "true"),
		Strategy: strategy,
	}
}

// topicConf holds a topic's current settings. It is shared by every topic
// value describing the same topic (a topic is replaced, not mutated, when
// its metadata changes), so partitions always see the latest settings.
type topicConf struct{ p atomic.Pointer[TopicSettings] }

func newTopicConf(c config.Config, overrides map[string]string) *topicConf {
	tc := &topicConf{}
	tc.p.Store(resolveSettings(c, overrides))
	return tc
}

// Settings returns the topic's current settings.
func (t *Topic) Settings() *TopicSettings { return t.conf.p.Load() }

// codecs maps compression.type to a codec.
var codecs = map[string]records.Codec{
	"uncompressed": records.CodecNone, "gzip": records.CodecGzip, "snappy": records.CodecSnappy,
	"lz4": records.CodecLZ4, "zstd": records.CodecZstd,
}

// resolveSettings resolves broker defaults and topic overrides (already
// validated by validateTopicConfigs).
func resolveSettings(c config.Config, overrides map[string]string) *TopicSettings {
	rc := config.ResolveTopicConfig(c, overrides)
	policy := config.SplitList(rc.Values["cleanup.policy"])
	s := &TopicSettings{
		MaxMessageBytes: int(rc.Int64("max.message.bytes")),
		Validate: records.ValidateOptions{
			Compacted:            strings.Contains(rc.Values["cleanup.policy"], "compact"),
			LogAppendTime:        rc.Values["message.timestamp.type"] == "LogAppendTime",
			CheckTimestamps:      rc.Values["message.timestamp.type"] != "LogAppendTime",
			TimestampBeforeMaxMs: rc.Int64("message.timestamp.before.max.ms"),
			TimestampAfterMaxMs:  rc.Int64("message.timestamp.after.max.ms"),
		},
		MinInsyncReplicas: int32(rc.Int64("min.insync.replicas")),
		retentionMs:       rc.Int64("retention.ms"),
		retentionBytes:    rc.Int64("retention.bytes"),
		cleaner: storage.CleanerConfig{
			DeleteRetentionMs:  rc.Int64("delete.retention.ms"),
			MinCompactionLagMs: rc.Int64("min.compaction.lag.ms"),
		},
	}
	s.cleaner.MinCleanableRatio, _ = strconv.ParseFloat(strings.TrimSpace(rc.Values["min.cleanable.dirty.ratio"]), 64)
	for _, p := range policy {
		s.CleanupDelete = s.CleanupDelete || p == "delete"
		s.cleanupCompact = s.cleanupCompact || p == "compact"
	}
	s.Codec, s.Recompress = codecs[rc.Values["compression.type"]]
	s.KeySchema, s.ValueSchema = schemaValidation(rc, "key"), schemaValidation(rc, "value")
	return s
}
