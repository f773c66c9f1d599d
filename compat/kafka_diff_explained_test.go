package compat

// The differences from Apache Kafka 4.4.0 that the differential tests
// accept, each with its reason. Every entry is one exact difference, as the
// test prints it: a difference that is not listed fails the test, and so
// does an entry whose difference is gone. Missing features name the issue
// that adds them: ACLs, quotas and delegation tokens (issue 14), the
// cluster, reassignment and DescribeQuorum (issue 11), dynamic broker
// configs (issue 15).

// apiVersionsExplained are the differences of TestKafkaDiffApiVersions, by
// the line it prints.
var apiVersionsExplained = map[string]string{}

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
	{
		steps: []string{"describe-configs-topic/v1", "describe-configs-topic/v4"},
		diff:  ".Resources[0].Configs[retention.ms].ConfigSynonyms: Kafka <nil>, kbroker [map[Name:log.retention.ms Source:DEFAULT_CONFIG UnknownTags:<normalised> Value:604800000]]",
		why: "Kafka lists a topic config's broker synonyms from the first one named exactly as its broker " +
			"property (ConfigHelper.configSynonyms drops the others), and log.retention.ms has no default of its own " +
			"(log.retention.hours=168 does), so retention.ms has none; kbroker lists the effective default under " +
			"log.retention.ms. The fix is in broker/api/describe_configs.go, which helper exact owns until it is merged.",
	},
}, kafkaOnlyTopicConfigs()...)

// minISRDynamicDefault is why Kafka's min.insync.replicas is a dynamic
// default: a KRaft cluster formatted with eligible leader replicas (KIP-966,
// on by default since 4.1) stores the cluster-wide min.insync.replicas as a
// dynamic broker default, so every topic inherits it from there. kbroker
// has no dynamic broker configs (issue 15); its value comes from
// server.properties or the default, as a ZooKeeper-mode Kafka reports it.
const minISRDynamicDefault = "KRaft with KIP-966 keeps min.insync.replicas as a cluster dynamic default; kbroker has no dynamic broker configs (issue 15)"

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
