package compat

// The differences from Apache Kafka 4.4.0 that the differential tests
// accept, each with its reason. Every entry is one exact difference, as the
// test prints it: a difference that is not listed fails the test, and so
// does an entry whose difference is gone. Missing features name the issue
// that adds them: ACLs, quotas and delegation tokens (issue 14), the
// cluster, reassignment and DescribeQuorum (issue 11).

// apiVersionsExplained are the differences of TestKafkaDiffApiVersions, by
// the line it prints.
var apiVersionsExplained = map[string]string{
	// Lower minimums: Kafka 4.0 removed these versions (KIP-896); kbroker
	// keeps them on purpose, so that clients of the Kafka 3.x era (and
	// librdkafka, sarama, kafka-python builds that still send them) keep
	// working, as they do against Kafka 3.9.
	"Produce(0): Kafka v0-13, kbroker v3-13":             "v3-v6 kept (KIP-896 removed v0-v2); v0-v2 carry message formats 0/1, which kbroker never accepted",
	"OffsetCommit(8): Kafka v2-10, kbroker v0-10":        oldVersionsKept,
	"OffsetFetch(9): Kafka v1-10, kbroker v0-10":         oldVersionsKept,
	"CreateTopics(19): Kafka v2-7, kbroker v0-7":         oldVersionsKept,
	"DeleteTopics(20): Kafka v1-6, kbroker v0-6":         oldVersionsKept,
	"OffsetForLeaderEpoch(23): Kafka v2-4, kbroker v0-4": oldVersionsKept,
	"DescribeConfigs(32): Kafka v1-4, kbroker v0-4":      oldVersionsKept,
	"DescribeACLs(29): Kafka v1-3, kbroker v0-3":         oldVersionsKept,
	"CreateACLs(30): Kafka v1-3, kbroker v0-3":           oldVersionsKept,
	"DeleteACLs(31): Kafka v1-3, kbroker v0-3":           oldVersionsKept,
	// KIP-932 v0 was the early-access share-group protocol of Kafka 4.0;
	// 4.1 made v1 the first version. kbroker still answers 4.0 clients.
	"ShareGroupHeartbeat(76): Kafka v1-1, kbroker v0-1": shareV0Kept,
	"ShareGroupDescribe(77): Kafka v1-1, kbroker v0-1":  shareV0Kept,
	"ShareFetch(78): Kafka v1-2, kbroker v0-2":          shareV0Kept,
	"ShareAcknowledge(79): Kafka v1-2, kbroker v0-2":    shareV0Kept,

	// Newer versions kbroker does not serve yet.
	"Fetch(1): Kafka v4-18, kbroker v4-17": "Fetch v18 adds the high watermark the follower knows, a replication field no Kafka 3.x broker sends; " +
		"v17 (the directory id of KIP-853) is what Kafka 3.9 followers send a kbroker leader",
	"DescribeLogDirs(35): Kafka v1-5, kbroker v0-4": "v5 adds IsCordoned (cordoned log dirs), not in kbroker yet; broker/api/describe_log_dirs.go belongs to helper hardcoord; v0 kept (KIP-896)",

	// Missing features, with the issue that adds them.
	"CreateDelegationToken(38): Kafka v1-3, kbroker does not advertise it":   "delegation tokens: issue 14",
	"RenewDelegationToken(39): Kafka v1-2, kbroker does not advertise it":    "delegation tokens: issue 14",
	"ExpireDelegationToken(40): Kafka v1-2, kbroker does not advertise it":   "delegation tokens: issue 14",
	"DescribeDelegationToken(41): Kafka v1-3, kbroker does not advertise it": "delegation tokens: issue 14",
	"AlterReplicaLogDirs(34): Kafka v1-2, kbroker does not advertise it":     "moving replicas between log dirs: with the cluster's reassignment, issue 11",
	"DescribeQuorum(55): Kafka v0-2, kbroker does not advertise it":          "kbroker has no KRaft quorum: issue 11",
	"AddRaftVoter(80): Kafka v0-1, kbroker does not advertise it":            "kbroker has no KRaft quorum: issue 11",
	"RemoveRaftVoter(81): Kafka v0-0, kbroker does not advertise it":         "kbroker has no KRaft quorum: issue 11",
	"UnregisterBroker(64): Kafka v0-0, kbroker does not advertise it":        "KRaft broker registration: issue 11",
	"UnregisterController(94): Kafka v0-0, kbroker does not advertise it":    "KRaft controller registration: issue 11",
	// The share coordinator's state RPCs are between brokers (KIP-932);
	// kbroker keeps share-group state in memory (coordinator/share).
	"InitializeShareGroupState(83): Kafka v0-0, kbroker does not advertise it":  shareStateRPC,
	"ReadShareGroupState(84): Kafka v0-0, kbroker does not advertise it":        shareStateRPC,
	"WriteShareGroupState(85): Kafka v0-1, kbroker does not advertise it":       shareStateRPC,
	"DeleteShareGroupState(86): Kafka v0-0, kbroker does not advertise it":      shareStateRPC,
	"ReadShareGroupStateSummary(87): Kafka v0-1, kbroker does not advertise it": shareStateRPC,
	// KIP-1071 Streams groups.
	"StreamsGroupHeartbeat(88): Kafka v0-1, kbroker does not advertise it":                 streamsGroups,
	"StreamsGroupDescribe(89): Kafka v0-1, kbroker does not advertise it":                  streamsGroups,
	"StreamsGroupTopologyDescriptionUpdate(93): Kafka v0-0, kbroker does not advertise it": streamsGroups,
}

const (
	oldVersionsKept = "versions Kafka 4.0 removed (KIP-896) kept for clients of the Kafka 3.x era, as Kafka 3.9 accepts them"
	shareV0Kept     = "KIP-932 v0 (Kafka 4.0 early access) kept for 4.0 clients"
	shareStateRPC   = "share-group state RPCs go between brokers and the share coordinator; kbroker serves them in cluster mode, while a single node writes __share_group_state itself"
	streamsGroups   = "the KIP-1071 Streams rebalance protocol is not in kbroker; Kafka Streams uses the classic protocol against it, as against Kafka 3.x"
)

// corpusExplanation is one accepted difference of TestKafkaDiffCorpus:
// the line diffFields prints, at each of steps ("<step>/v<version>").
type corpusExplanation struct {
	steps []string
	diff  string
	why   string
}

var corpusExplained = append([]corpusExplanation{
	{
		steps: []string{"create-topic-validate-only/v7", "create-topic-small/v7"},
		diff:  ".Topics[0].Configs[min.insync.replicas].Source: Kafka 3, kbroker 5",
		why:   minISRDynamicDefault,
	},
	{
		steps: []string{"describe-configs-topic/v1", "describe-configs-topic/v4"},
		diff:  ".Resources[0].Configs[min.insync.replicas].Source: Kafka DYNAMIC_DEFAULT_BROKER_CONFIG, kbroker DEFAULT_CONFIG",
		why:   minISRDynamicDefault,
	},
	{
		steps: []string{"describe-configs-topic/v1", "describe-configs-topic/v4"},
		diff: `.Resources[0].Configs[min.insync.replicas].ConfigSynonyms: Kafka [{"Name":"min.insync.replicas","Source":"DYNAMIC_DEFAULT_BROKER_CONFIG","UnknownTags":"\u003cnormalised\u003e","Value":"1"},` +
			`{"Name":"min.insync.replicas","Source":"DEFAULT_CONFIG","UnknownTags":"\u003cnormalised\u003e","Value":"1"}], ` +
			`kbroker [{"Name":"min.insync.replicas","Source":"DEFAULT_CONFIG","UnknownTags":"\u003cnormalised\u003e","Value":"1"}]`,
		why: minISRDynamicDefault,
	},
}, kafkaOnlyTopicConfigs()...)

// minISRDynamicDefault is why Kafka's min.insync.replicas is a dynamic
// default: a KRaft cluster formatted with eligible leader replicas (KIP-966,
// on by default since 4.1) stores the cluster-wide min.insync.replicas as a
// dynamic broker default, so every topic inherits it from there. kbroker
// has dynamic broker configs but sets none when its metadata is created;
// its value comes from server.properties or the default, as a
// ZooKeeper-mode Kafka reports it.
const minISRDynamicDefault = "KRaft with KIP-966 keeps min.insync.replicas as a cluster dynamic default; kbroker sets no dynamic default when its metadata is created, as ZooKeeper-mode Kafka"

// kafkaOnlyTopicConfigs are the topic configs Kafka 4.4.0 lists in a
// CreateTopics answer (v5+) that kbroker does not have: tiered storage,
// replication throttles (both need features kbroker lacks: remote log
// storage; a cluster, issue 11), per-codec compression levels (KIP-390:
// kbroker recompresses nothing, it keeps the producer's batches), the
// share-group dead-letter queue and the decompression bound.
// kbroker refuses them as unknown configs rather than accept a setting it
// would ignore.
func kafkaOnlyTopicConfigs() []corpusExplanation {
	configs := []struct{ name, value, why string }{
		{"compression.gzip.level", "-1", "KIP-390 levels: kbroker never recompresses a batch"},
		{"compression.lz4.level", "9", "KIP-390 levels: kbroker never recompresses a batch"},
		{"compression.zstd.level", "3", "KIP-390 levels: kbroker never recompresses a batch"},
		{"errors.deadletterqueue.group.enable", "false", "share-group dead-letter queues are not in kbroker"},
		{"follower.replication.throttled.replicas", "", "replication throttles need a cluster (issue 11) and quotas (issue 14)"},
		{"leader.replication.throttled.replicas", "", "replication throttles need a cluster (issue 11) and quotas (issue 14)"},
		{"local.retention.bytes", "-2", "tiered storage (KIP-405) is not in kbroker"},
		{"local.retention.ms", "-2", "tiered storage (KIP-405) is not in kbroker"},
		{"max.decompressed.message.bytes", "2147483639", "kbroker bounds decompression with a fixed 256 MiB (records.MaxDecompressedSize), not a topic config"},
		{"remote.copy.lag.bytes", "-1", "tiered storage (KIP-405) is not in kbroker"},
		{"remote.copy.lag.ms", "0", "tiered storage (KIP-405) is not in kbroker"},
		{"remote.log.copy.disable", "false", "tiered storage (KIP-405) is not in kbroker"},
		{"remote.log.delete.on.disable", "false", "tiered storage (KIP-405) is not in kbroker"},
		{"remote.storage.enable", "false", "tiered storage (KIP-405) is not in kbroker"},
	}
	var out []corpusExplanation
	for _, c := range configs {
		out = append(out, corpusExplanation{
			steps: []string{"create-topic-validate-only/v7", "create-topic-small/v7"},
			diff: ".Topics[0].Configs[" + c.name + "]: Kafka map[IsSensitive:false Name:" + c.name +
				" ReadOnly:false Source:5 UnknownTags:<normalised> Value:" + c.value + "], kbroker <nil>",
			why: c.why,
		})
	}
	return out
}

// corpusExplainedIndex keys corpusExplained by "<step>/v<version> <diff>".
func corpusExplainedIndex() map[string]string {
	idx := map[string]string{}
	for _, e := range corpusExplained {
		for _, st := range e.steps {
			idx[st+" "+e.diff] = e.why
		}
	}
	return idx
}
