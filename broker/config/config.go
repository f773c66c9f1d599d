// Package config maps Kafka's property names onto the broker's configuration:
// broker properties (Config, ParseConfig, one table of names and defaults),
// listener security and SASL settings, and the catalog of topic configs with
// their broker defaults. It is the one place a Kafka property name is mapped.
package config

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config is the broker's configuration. Every field maps to a Kafka property
// name in the props table below; that table is the one place names are mapped.
type Config struct {
	NodeID                   int32
	Listeners                []Listener
	AdvertisedListeners      []Listener
	LogDirs                  []string
	NumPartitions            int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	LogSegmentBytes          int64
	LogRollMs                int64
	LogIndexIntervalBytes    int32
	MessageMaxBytes          int32
	SocketRequestMaxBytes    int32
	LogFlushIntervalMessages int64
	LogFlushIntervalMs       int64
	LogRetentionMs           int64
	LogRetentionBytes        int64
	LogCleanupPolicy         string
	MinInsyncReplicas        int32
	CompressionType          string
	ClusterID                string
	// FetchSessionCacheSlots bounds the incremental fetch sessions (0: none).
	FetchSessionCacheSlots int32

	// Log dir safety (storage.DirConfig). FileDeleteDelayMs is
	// log.segment.delete.delay.ms (Kafka's broker name; kbroker's older
	// file.delete.delay.ms wins when set): a deleted partition's directory
	// stays, renamed "-delete", this long, as in Kafka's LogManager.
	// LogFlushOffsetCheckpointIntervalMs is
	// log.flush.offset.checkpoint.interval.ms: how often recovery points are
	// checkpointed, bounding what a crash re-scans. Kafka's 0 is kept as 1
	// (storage reads 0 as "default").
	FileDeleteDelayMs                  int64
	LogFlushOffsetCheckpointIntervalMs int64
	// LogSegmentOpenFilesMax is log.segment.open.files.max (a kbroker
	// property, not Kafka's): how many descriptors of inactive segments
	// each log dir keeps open (storage.DirConfig.SegmentOpenFilesMax).
	LogSegmentOpenFilesMax int32
	// LogSegmentWritebackBytes is log.segment.writeback.bytes (a kbroker
	// setting): start the writeback of every this many bytes a partition
	// appends, off the append path (storage.DirConfig.SegmentWritebackBytes);
	// -1 leaves writeback to the kernel alone.
	LogSegmentWritebackBytes int64
	// NumRecoveryThreadsPerDataDir is num.recovery.threads.per.data.dir:
	// how many logs of a dir are loaded (recovered) at once at start-up and
	// flushed and closed at once at shutdown (storage.DirConfig.RecoveryThreads).
	NumRecoveryThreadsPerDataDir int32

	// Security: listener protocols and SASL (sasl.go).
	SecurityProtocolMap     map[string]string
	InterBrokerListenerName string
	// InterBroker is how this broker dials other brokers (interbroker.go),
	// resolved in cluster mode.
	InterBroker InterBrokerClient
	SASL        SASLConfig
	// Authz is authorizer.class.name, super.users and
	// allow.everyone.if.no.acl.found (authz.go).
	Authz AuthzConfig

	// Cluster is the cluster-mode config (cluster.go); inert without
	// zookeeper.connect.
	Cluster ClusterConfig

	// Log retention and compaction tasks (broker/replica/log_tasks.go).
	LogRetentionCheckIntervalMs int64
	LogCleanerEnable            bool
	LogCleanerBackoffMs         int64

	// Group coordinator and __consumer_offsets.
	OffsetsTopicNumPartitions           int32
	OffsetsTopicSegmentBytes            int64
	GroupMinSessionTimeoutMs            int32
	GroupMaxSessionTimeoutMs            int32
	GroupInitialRebalanceDelayMs        int32
	GroupMaxSize                        int32
	OffsetsRetentionMs                  int64
	OffsetsRetentionCheckIntervalMs     int64
	OffsetMetadataMaxBytes              int32
	ProducerIDExpirationMs              int64
	ProducerIDExpirationCheckIntervalMs int64
	// Transaction coordinator and __transaction_state.
	TransactionStateLogNumPartitions          int32
	TransactionStateLogSegmentBytes           int64
	TransactionMaxTimeoutMs                   int32
	TransactionalIDExpirationMs               int64
	TransactionAbortTimedOutCleanupIntervalMs int64
	// KIP-848 consumer groups.
	GroupConsumerHeartbeatIntervalMs int32
	GroupConsumerSessionTimeoutMs    int32
	GroupConsumerAssignors           string
	// Bounds of the consumer.* group configs (KIP-848).
	GroupConsumerMinSessionTimeoutMs    int32
	GroupConsumerMaxSessionTimeoutMs    int32
	GroupConsumerMinHeartbeatIntervalMs int32
	GroupConsumerMaxHeartbeatIntervalMs int32
	// KIP-932 share groups (coordinator/share).
	GroupShareHeartbeatIntervalMs     int32
	GroupShareSessionTimeoutMs        int32
	GroupShareDeliveryCountLimit      int32
	GroupShareRecordLockDurationMs    int32
	GroupShareMinRecordLockDurationMs int32
	GroupShareMaxRecordLockDurationMs int32
	GroupSharePartitionMaxRecordLocks int32
	GroupShareMaxSize                 int32
	// ShareStateTopicNumPartitions is share.coordinator.state.topic.num.partitions,
	// the partitions of __share_group_state.
	ShareStateTopicNumPartitions int32
	// Bounds of the share.* session and heartbeat group configs.
	GroupShareMinSessionTimeoutMs    int32
	GroupShareMaxSessionTimeoutMs    int32
	GroupShareMinHeartbeatIntervalMs int32
	GroupShareMaxHeartbeatIntervalMs int32

	// Limits of the network edge and of fetch responses (network.go).
	NetworkLimits
	// QuotaConfig is quota.window.* (quota.go).
	QuotaConfig

	// HTTP is the broker's own HTTP listener (http.go).
	HTTP HTTPConfig
	// SchemaRegistry is the built-in Schema Registry (schemaregistry.go).
	SchemaRegistry SchemaRegistryConfig
	// RestProxy is the Confluent REST Proxy listener (restproxy.go).
	RestProxy RestProxyConfig
	// Logging is log.level and log.format (logging.go).
	Logging LoggingConfig

	// Props holds the properties set explicitly (file and overrides), for DescribeConfigs.
	Props map[string]string

	Logger *slog.Logger
	Now    func() time.Time
}

// Listener is one listener endpoint, e.g. PLAINTEXT://127.0.0.1:9092 or
// CLIENT://:9093. SecurityProtocol comes from listener.security.protocol.map.
type Listener struct {
	Name             string
	Host             string
	Port             int32
	SecurityProtocol string
	// TLS is the listener's ssl.* configuration (tls.go), set on SSL and
	// SASL_SSL listeners of Config.Listeners, nil otherwise.
	TLS *TLSConfig
}

// IsSASL reports whether clients authenticate with SASL on this listener
// (SASL_PLAINTEXT, SASL_SSL).
func (l Listener) IsSASL() bool {
	return l.SecurityProtocol == ProtoSASLPlaintext || l.SecurityProtocol == ProtoSASLSSL
}

func (l Listener) String() string { return fmt.Sprintf("%s://%s", l.Name, hostPort(l.Host, l.Port)) }

// Addr is the host:port to bind or dial.
func (l Listener) Addr() string { return hostPort(l.Host, l.Port) }

func hostPort(h string, p int32) string {
	if strings.Contains(h, ":") {
		return fmt.Sprintf("[%s]:%d", h, p)
	}
	return fmt.Sprintf("%s:%d", h, p)
}

// DefaultLogDir is where a broker started without log.dirs keeps its data.
func DefaultLogDir() string { return filepath.Join(os.TempDir(), "kbroker-logs") }

// prop maps one Kafka property to a Config field, with what DescribeConfigs
// reports about it: Kafka's type (ConfigDef.Type) and one line of
// documentation.
type prop struct {
	def   string
	typ   kmsg.ConfigType
	doc   string
	apply func(c *Config, v string) error
}

func intProp(set func(c *Config, v int64), min, max int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		if n < min || n > max {
			return fmt.Errorf("%d out of range [%d, %d]", n, min, max)
		}
		set(c, n)
		return nil
	}
}

func boolProp(set func(c *Config, v bool)) func(*Config, string) error {
	return func(c *Config, v string) error {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			set(c, true)
		case "false":
			set(c, false)
		default:
			return fmt.Errorf("not a boolean: %q", v)
		}
		return nil
	}
}

// PropertyNames returns the name of every Kafka property the broker honours
// (the props table; never the SASL secrets), in no order.
func PropertyNames() []string {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	return names
}

// props is the table of every Kafka property the broker honours, with Kafka's defaults.
var props = map[string]prop{
	"node.id":   {"0", kmsg.ConfigTypeInt, "The node id of this server.", intProp(func(c *Config, v int64) { c.NodeID = int32(v) }, -1, math.MaxInt32)},
	"broker.id": {"", kmsg.ConfigTypeInt, "The broker id of this server (an alias of node.id).", intProp(func(c *Config, v int64) { c.NodeID = int32(v) }, -1, math.MaxInt32)},
	"listeners": {"PLAINTEXT://127.0.0.1:9092", kmsg.ConfigTypeList, "Comma-separated listener URIs (NAME://host:port) the broker binds.", func(c *Config, v string) (err error) {
		c.Listeners, err = parseListeners(v)
		return err
	}},
	"advertised.listeners": {"", kmsg.ConfigTypeList, "Listener URIs given to clients, when they differ from listeners.", func(c *Config, v string) (err error) {
		c.AdvertisedListeners, err = parseListeners(v)
		return err
	}},
	"log.dirs": {"", kmsg.ConfigTypeList, "Comma-separated directories that hold the log data.", func(c *Config, v string) error {
		c.LogDirs = SplitList(v)
		return nil
	}},
	"log.dir": {"", kmsg.ConfigTypeList, "The directory that holds the log data, when log.dirs is not set.", func(c *Config, v string) error {
		if len(c.LogDirs) == 0 {
			c.LogDirs = SplitList(v)
		}
		return nil
	}},
	"num.partitions":              {"1", kmsg.ConfigTypeInt, "The default number of partitions of an automatically created topic.", intProp(func(c *Config, v int64) { c.NumPartitions = int32(v) }, 1, math.MaxInt32)},
	"default.replication.factor":  {"1", kmsg.ConfigTypeInt, "The default replication factor of an automatically created topic.", intProp(func(c *Config, v int64) { c.DefaultReplicationFactor = int16(v) }, 1, math.MaxInt16)},
	"auto.create.topics.enable":   {"true", kmsg.ConfigTypeBoolean, "Whether a topic is created when a client first asks for it in Metadata.", boolProp(func(c *Config, v bool) { c.AutoCreateTopics = v })},
	"log.segment.bytes":           {"1073741824", kmsg.ConfigTypeInt, "The maximum size of a single log segment file.", intProp(func(c *Config, v int64) { c.LogSegmentBytes = v }, 14, math.MaxInt32)},
	"log.roll.hours":              {"168", kmsg.ConfigTypeInt, "The maximum time in hours before a new log segment is rolled.", intProp(func(c *Config, v int64) { c.LogRollMs = v * 3600_000 }, 1, math.MaxInt32)},
	"log.roll.ms":                 {"", kmsg.ConfigTypeLong, "The maximum time in ms before a new log segment is rolled; overrides log.roll.hours.", intProp(func(c *Config, v int64) { c.LogRollMs = v }, 1, math.MaxInt64)},
	"log.index.interval.bytes":    {"4096", kmsg.ConfigTypeInt, "The interval in bytes at which an entry is added to the offset index.", intProp(func(c *Config, v int64) { c.LogIndexIntervalBytes = int32(v) }, 0, math.MaxInt32)},
	"message.max.bytes":           {"1048588", kmsg.ConfigTypeInt, "The largest record batch size the broker accepts.", intProp(func(c *Config, v int64) { c.MessageMaxBytes = int32(v) }, 0, math.MaxInt32)},
	"socket.request.max.bytes":    {"104857600", kmsg.ConfigTypeInt, "The maximum number of bytes in a request.", intProp(func(c *Config, v int64) { c.SocketRequestMaxBytes = int32(v) }, 1, math.MaxInt32)},
	"log.flush.interval.messages": {"9223372036854775807", kmsg.ConfigTypeLong, "The number of messages appended to a partition before its log is fsynced.", intProp(func(c *Config, v int64) { c.LogFlushIntervalMessages = v }, 1, math.MaxInt64)},
	"log.flush.interval.ms":       {"", kmsg.ConfigTypeLong, "The maximum time in ms a message stays in memory before the log is fsynced.", intProp(func(c *Config, v int64) { c.LogFlushIntervalMs = v }, 0, math.MaxInt64)},
	"log.retention.hours":         {"168", kmsg.ConfigTypeInt, "The number of hours a log segment is kept before deletion.", intProp(func(c *Config, v int64) { c.LogRetentionMs = v * 3600_000 }, -1, math.MaxInt32)},
	"log.retention.minutes":       {"", kmsg.ConfigTypeInt, "The number of minutes a log segment is kept; overrides log.retention.hours.", intProp(func(c *Config, v int64) { c.LogRetentionMs = v * 60_000 }, -1, math.MaxInt32)},
	"log.retention.ms":            {"", kmsg.ConfigTypeLong, "The number of ms a log segment is kept; overrides log.retention.minutes.", intProp(func(c *Config, v int64) { c.LogRetentionMs = v }, -1, math.MaxInt64)},
	"log.retention.bytes":         {"-1", kmsg.ConfigTypeLong, "The maximum size of a partition's log before old segments are deleted.", intProp(func(c *Config, v int64) { c.LogRetentionBytes = v }, -1, math.MaxInt64)},
	"log.cleanup.policy": {"delete", kmsg.ConfigTypeList, "The default cleanup policy of segments past retention: delete, compact or both.", func(c *Config, v string) error {
		for _, p := range SplitList(v) {
			if p != "delete" && p != "compact" {
				return fmt.Errorf("unknown cleanup policy %q", p)
			}
		}
		c.LogCleanupPolicy = v
		return nil
	}},
	"min.insync.replicas": {"1", kmsg.ConfigTypeInt, "The minimum number of in-sync replicas that must acknowledge an acks=all write.", intProp(func(c *Config, v int64) { c.MinInsyncReplicas = int32(v) }, 1, math.MaxInt32)},
	"compression.type": {"producer", kmsg.ConfigTypeString, "The final compression type of a topic: producer keeps the producer's codec.", func(c *Config, v string) error {
		switch v {
		case "producer", "uncompressed", "gzip", "snappy", "lz4", "zstd":
			c.CompressionType = v
			return nil
		}
		return fmt.Errorf("unknown compression type %q", v)
	}},
	"offsets.topic.num.partitions":             {"50", kmsg.ConfigTypeInt, "The number of partitions of the offsets topic.", intProp(func(c *Config, v int64) { c.OffsetsTopicNumPartitions = int32(v) }, 1, math.MaxInt32)},
	"offsets.topic.segment.bytes":              {"104857600", kmsg.ConfigTypeInt, "The segment size of the offsets topic.", intProp(func(c *Config, v int64) { c.OffsetsTopicSegmentBytes = v }, 1, math.MaxInt32)},
	"group.min.session.timeout.ms":             {"6000", kmsg.ConfigTypeInt, "The minimum session timeout a classic group member may ask for.", intProp(func(c *Config, v int64) { c.GroupMinSessionTimeoutMs = int32(v) }, 0, math.MaxInt32)},
	"group.max.session.timeout.ms":             {"1800000", kmsg.ConfigTypeInt, "The maximum session timeout a classic group member may ask for.", intProp(func(c *Config, v int64) { c.GroupMaxSessionTimeoutMs = int32(v) }, 0, math.MaxInt32)},
	"group.initial.rebalance.delay.ms":         {"3000", kmsg.ConfigTypeInt, "How long a new classic group waits for more members before the first rebalance.", intProp(func(c *Config, v int64) { c.GroupInitialRebalanceDelayMs = int32(v) }, 0, math.MaxInt32)},
	"group.max.size":                           {"2147483647", kmsg.ConfigTypeInt, "The maximum number of members of a classic group.", intProp(func(c *Config, v int64) { c.GroupMaxSize = int32(v) }, 1, math.MaxInt32)},
	"offsets.retention.minutes":                {"10080", kmsg.ConfigTypeInt, "How long committed offsets of an empty group are kept.", intProp(func(c *Config, v int64) { c.OffsetsRetentionMs = v * 60_000 }, 1, math.MaxInt32)},
	"offsets.retention.check.interval.ms":      {"600000", kmsg.ConfigTypeLong, "How often expired committed offsets are removed.", intProp(func(c *Config, v int64) { c.OffsetsRetentionCheckIntervalMs = v }, 1, math.MaxInt64)},
	"offset.metadata.max.bytes":                {"4096", kmsg.ConfigTypeInt, "The maximum size of the metadata of an offset commit.", intProp(func(c *Config, v int64) { c.OffsetMetadataMaxBytes = int32(v) }, 0, math.MaxInt32)},
	"log.retention.check.interval.ms":          {"300000", kmsg.ConfigTypeLong, "How often the log retention is checked.", intProp(func(c *Config, v int64) { c.LogRetentionCheckIntervalMs = v }, 1, math.MaxInt64)},
	"log.cleaner.enable":                       {"true", kmsg.ConfigTypeBoolean, "Whether the log cleaner compacts topics with cleanup.policy=compact.", boolProp(func(c *Config, v bool) { c.LogCleanerEnable = v })},
	"log.cleaner.backoff.ms":                   {"15000", kmsg.ConfigTypeLong, "How long the log cleaner sleeps when there is nothing to clean.", intProp(func(c *Config, v int64) { c.LogCleanerBackoffMs = v }, 0, math.MaxInt64)},
	"group.consumer.heartbeat.interval.ms":     {"5000", kmsg.ConfigTypeInt, "The heartbeat interval given to members of consumer groups (KIP-848).", intProp(func(c *Config, v int64) { c.GroupConsumerHeartbeatIntervalMs = int32(v) }, 1, math.MaxInt32)},
	"group.consumer.session.timeout.ms":        {"45000", kmsg.ConfigTypeInt, "The session timeout of members of consumer groups (KIP-848).", intProp(func(c *Config, v int64) { c.GroupConsumerSessionTimeoutMs = int32(v) }, 1, math.MaxInt32)},
	"group.consumer.min.session.timeout.ms":    {"45000", kmsg.ConfigTypeInt, "The minimum session timeout of consumer groups, bounding consumer.session.timeout.ms.", intProp(func(c *Config, v int64) { c.GroupConsumerMinSessionTimeoutMs = int32(v) }, 1, math.MaxInt32)},
	"group.consumer.max.session.timeout.ms":    {"60000", kmsg.ConfigTypeInt, "The maximum session timeout of consumer groups, bounding consumer.session.timeout.ms.", intProp(func(c *Config, v int64) { c.GroupConsumerMaxSessionTimeoutMs = int32(v) }, 1, math.MaxInt32)},
	"group.consumer.min.heartbeat.interval.ms": {"5000", kmsg.ConfigTypeInt, "The minimum heartbeat interval of consumer groups, bounding consumer.heartbeat.interval.ms.", intProp(func(c *Config, v int64) { c.GroupConsumerMinHeartbeatIntervalMs = int32(v) }, 1, math.MaxInt32)},
	"group.consumer.max.heartbeat.interval.ms": {"15000", kmsg.ConfigTypeInt, "The maximum heartbeat interval of consumer groups, bounding consumer.heartbeat.interval.ms.", intProp(func(c *Config, v int64) { c.GroupConsumerMaxHeartbeatIntervalMs = int32(v) }, 1, math.MaxInt32)},
	"group.share.min.session.timeout.ms":       {"45000", kmsg.ConfigTypeInt, "The minimum session timeout of share groups, bounding share.session.timeout.ms.", intProp(func(c *Config, v int64) { c.GroupShareMinSessionTimeoutMs = int32(v) }, 1, math.MaxInt32)},
	"group.share.max.session.timeout.ms":       {"60000", kmsg.ConfigTypeInt, "The maximum session timeout of share groups, bounding share.session.timeout.ms.", intProp(func(c *Config, v int64) { c.GroupShareMaxSessionTimeoutMs = int32(v) }, 1, math.MaxInt32)},
	"group.share.min.heartbeat.interval.ms":    {"5000", kmsg.ConfigTypeInt, "The minimum heartbeat interval of share groups, bounding share.heartbeat.interval.ms.", intProp(func(c *Config, v int64) { c.GroupShareMinHeartbeatIntervalMs = int32(v) }, 1, math.MaxInt32)},
	"group.share.max.heartbeat.interval.ms":    {"15000", kmsg.ConfigTypeInt, "The maximum heartbeat interval of share groups, bounding share.heartbeat.interval.ms.", intProp(func(c *Config, v int64) { c.GroupShareMaxHeartbeatIntervalMs = int32(v) }, 1, math.MaxInt32)},
	"group.consumer.assignors": {"uniform,range", kmsg.ConfigTypeList, "The server-side assignors of consumer groups; the first is the default.", func(c *Config, v string) error {
		for _, a := range SplitList(v) {
			if a != "uniform" && a != "range" {
				return fmt.Errorf("unknown assignor %q (uniform, range)", a)
			}
		}
		c.GroupConsumerAssignors = v
		return nil
	}},
	"group.share.heartbeat.interval.ms":                           {"5000", kmsg.ConfigTypeInt, "The heartbeat interval given to members of share groups.", intProp(func(c *Config, v int64) { c.GroupShareHeartbeatIntervalMs = int32(v) }, 1, math.MaxInt32)},
	"group.share.session.timeout.ms":                              {"45000", kmsg.ConfigTypeInt, "The session timeout of members of share groups.", intProp(func(c *Config, v int64) { c.GroupShareSessionTimeoutMs = int32(v) }, 1, math.MaxInt32)},
	"group.share.delivery.count.limit":                            {"5", kmsg.ConfigTypeInt, "The number of delivery attempts of a record to a share group before it is archived.", intProp(func(c *Config, v int64) { c.GroupShareDeliveryCountLimit = int32(v) }, 2, 10)},
	"group.share.record.lock.duration.ms":                         {"30000", kmsg.ConfigTypeInt, "The acquisition lock duration of a record delivered to a share group.", intProp(func(c *Config, v int64) { c.GroupShareRecordLockDurationMs = int32(v) }, 1000, 3600000)},
	"group.share.min.record.lock.duration.ms":                     {"15000", kmsg.ConfigTypeInt, "The minimum of share.record.lock.duration.ms.", intProp(func(c *Config, v int64) { c.GroupShareMinRecordLockDurationMs = int32(v) }, 1000, 30000)},
	"group.share.max.record.lock.duration.ms":                     {"60000", kmsg.ConfigTypeInt, "The maximum of share.record.lock.duration.ms.", intProp(func(c *Config, v int64) { c.GroupShareMaxRecordLockDurationMs = int32(v) }, 30000, 3600000)},
	"group.share.partition.max.record.locks":                      {"2000", kmsg.ConfigTypeInt, "The maximum number of records in flight in one share-partition.", intProp(func(c *Config, v int64) { c.GroupSharePartitionMaxRecordLocks = int32(v) }, 100, 10000)},
	"group.share.max.size":                                        {"200", kmsg.ConfigTypeInt, "The maximum number of members of a share group.", intProp(func(c *Config, v int64) { c.GroupShareMaxSize = int32(v) }, 1, 1000)},
	"share.coordinator.state.topic.num.partitions":                {"50", kmsg.ConfigTypeInt, "The number of partitions of the share-group state topic (__share_group_state).", intProp(func(c *Config, v int64) { c.ShareStateTopicNumPartitions = int32(v) }, 1, math.MaxInt32)},
	"max.incremental.fetch.session.cache.slots":                   {"1000", kmsg.ConfigTypeInt, "The maximum number of incremental fetch sessions the broker keeps.", intProp(func(c *Config, v int64) { c.FetchSessionCacheSlots = int32(v) }, 0, math.MaxInt32)},
	"producer.id.expiration.ms":                                   {"86400000", kmsg.ConfigTypeInt, "How long a producer id's state is kept after its last write.", intProp(func(c *Config, v int64) { c.ProducerIDExpirationMs = v }, 1, math.MaxInt32)},
	"producer.id.expiration.check.interval.ms":                    {"600000", kmsg.ConfigTypeInt, "How often expired producer ids are removed.", intProp(func(c *Config, v int64) { c.ProducerIDExpirationCheckIntervalMs = v }, 1, math.MaxInt32)},
	"transaction.state.log.num.partitions":                        {"50", kmsg.ConfigTypeInt, "The number of partitions of the transaction topic.", intProp(func(c *Config, v int64) { c.TransactionStateLogNumPartitions = int32(v) }, 1, math.MaxInt32)},
	"transaction.state.log.segment.bytes":                         {"104857600", kmsg.ConfigTypeInt, "The segment size of the transaction topic.", intProp(func(c *Config, v int64) { c.TransactionStateLogSegmentBytes = v }, 1, math.MaxInt32)},
	"transaction.max.timeout.ms":                                  {"900000", kmsg.ConfigTypeInt, "The maximum transaction timeout a producer may ask for.", intProp(func(c *Config, v int64) { c.TransactionMaxTimeoutMs = int32(v) }, 1, math.MaxInt32)},
	"transactional.id.expiration.ms":                              {"604800000", kmsg.ConfigTypeInt, "How long a transactional id is kept without a transaction status update.", intProp(func(c *Config, v int64) { c.TransactionalIDExpirationMs = v }, 1, math.MaxInt32)},
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": {"10000", kmsg.ConfigTypeInt, "How often timed-out transactions are aborted.", intProp(func(c *Config, v int64) { c.TransactionAbortTimedOutCleanupIntervalMs = v }, 1, math.MaxInt32)},
	// Log dir safety: the delay of deletions, the recovery-point checkpoints.
	"file.delete.delay.ms":                    {"", kmsg.ConfigTypeLong, "kbroker's older name of log.segment.delete.delay.ms; wins when set.", intProp(func(c *Config, v int64) { c.FileDeleteDelayMs = max(v, 1) }, 0, math.MaxInt64)},
	"log.flush.offset.checkpoint.interval.ms": {"60000", kmsg.ConfigTypeInt, "How often the recovery points of the logs are checkpointed.", intProp(func(c *Config, v int64) { c.LogFlushOffsetCheckpointIntervalMs = max(v, 1) }, 0, math.MaxInt32)},
	"log.segment.writeback.bytes":             {"8388608", kmsg.ConfigTypeLong, "Start writing back each this many bytes a partition appends to its segment, behind the writer, so dirty pages stay few and the fsync before a roll is short; -1 leaves it to the kernel (kbroker's own property).", intProp(func(c *Config, v int64) { c.LogSegmentWritebackBytes = v }, -1, math.MaxInt64)},
	"log.segment.open.files.max":              {"1000", kmsg.ConfigTypeInt, "The most segment files kbroker keeps open at once (kbroker's own property).", intProp(func(c *Config, v int64) { c.LogSegmentOpenFilesMax = int32(v) }, 1, math.MaxInt32)},
	"cluster.id": {"", kmsg.ConfigTypeString, "The cluster id written to meta.properties when the log dirs are new.", func(c *Config, v string) error {
		c.ClusterID = v
		return nil
	}},
	"listener.security.protocol.map": {defaultSecurityProtocolMap, kmsg.ConfigTypeString, "Maps listener names to security protocols (NAME:PROTOCOL, comma-separated).", func(c *Config, v string) (err error) {
		c.SecurityProtocolMap, err = parseSecurityProtocolMap(v)
		return err
	}},
	"sasl.enabled.mechanisms": {defaultSASLMechanisms, kmsg.ConfigTypeList, "The SASL mechanisms the broker accepts.", func(c *Config, v string) (err error) {
		c.SASL.EnabledMechanisms, err = parseSASLMechanisms(v)
		return err
	}},
	"inter.broker.listener.name": {"", kmsg.ConfigTypeString, "The listener brokers use among themselves.", func(c *Config, v string) error {
		c.InterBrokerListenerName = strings.ToUpper(strings.TrimSpace(v))
		return nil
	}},
}

// BrokerConfigDoc returns a broker property's type and documentation, as
// DescribeConfigs v3+ reports them; ok is false for a name not in the table.
func BrokerConfigDoc(key string) (typ kmsg.ConfigType, doc string, ok bool) {
	p, ok := props[key]
	return p.typ, p.doc, ok
}

// BrokerConfigValue is the value DescribeConfigs reports for a broker property.
func (c Config) BrokerConfigValue(key string) (string, bool) {
	if v, ok := c.Props[key]; ok {
		return v, true
	}
	return props[key].def, false
}

// order makes later, more specific properties win: log.roll.ms over
// log.roll.hours, log.retention.ms over minutes over hours, broker.id over node.id.
var order = []string{"log.roll.hours", "log.roll.ms", "log.retention.hours", "log.retention.minutes", "log.retention.ms", "node.id", "broker.id", "log.dirs", "log.dir",
	"log.segment.delete.delay.ms", "file.delete.delay.ms"}

// ParseConfig builds a Config from Kafka properties. Keys the broker does not
// know are returned in unknown (the caller logs and ignores them); a malformed
// value is an error naming its key.
func ParseConfig(p map[string]string) (cfg Config, unknown []string, err error) {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		for i, o := range order {
			if o == k {
				return i + 1
			}
		}
		return 0
	}
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		v, set := p[k]
		if !set {
			v = props[k].def
		}
		if v == "" && !set {
			continue
		}
		if err := props[k].apply(&cfg, v); err != nil {
			return Config{}, nil, fmt.Errorf("config %s: %w", k, err)
		}
	}
	for k := range p {
		if _, ok := props[k]; !ok && !isSecurityKey(k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	cfg.Props = make(map[string]string, len(p))
	for k, v := range p {
		if _, ok := props[k]; ok {
			cfg.Props[k] = v
		}
	}
	if len(cfg.LogDirs) == 0 {
		cfg.LogDirs = []string{DefaultLogDir()}
	}
	if cfg.LogFlushIntervalMs == 0 {
		cfg.LogFlushIntervalMs = math.MaxInt64
	}
	if len(cfg.AdvertisedListeners) == 0 {
		cfg.AdvertisedListeners = cfg.Listeners
	}
	if len(cfg.Listeners) == 0 {
		return Config{}, nil, fmt.Errorf("config listeners: no listener")
	}
	if err := cfg.resolveSecurity(p); err != nil {
		return Config{}, nil, err
	}
	if err := cfg.resolveConsoleSASL(p); err != nil { // http.go
		return Config{}, nil, err
	}
	if err := cfg.resolveSchemaRegistryTLS(p); err != nil { // schemaregistry.go
		return Config{}, nil, err
	}
	if err := cfg.resolveHTTPTLS(p); err != nil { // http.go
		return Config{}, nil, err
	}
	if err := cfg.resolveRestProxyTLS(p); err != nil { // restproxy.go
		return Config{}, nil, err
	}
	return cfg, unknown, nil
}

func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseListeners parses Kafka's listener list: NAME://host:port, where NAME
// is a listener name (upper-cased, as Kafka does) whose security protocol
// listener.security.protocol.map gives, and an empty host binds every
// interface.
func parseListeners(v string) ([]Listener, error) {
	var out []Listener
	for _, s := range SplitList(v) {
		name, addr, ok := strings.Cut(s, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener %q is not NAME://host:port", s)
		}
		host, ps, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("listener %q is not NAME://host:port", s)
		}
		port, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("listener %q has no valid port", s)
		}
		out = append(out, Listener{Name: strings.ToUpper(name), Host: host, Port: int32(port)})
	}
	return out, nil
}
