package compat

// The differences from Apache Kafka 4.4.0 that TestJavaConsoleTools accepts,
// each with its reason: the masked lines only one broker printed, per step
// and stream (or the exit codes). Anything else that differs fails the
// step, and an entry whose difference is gone fails the scenario. Missing
// features name the issue that adds them (kafka_diff_explained_test.go).

// Reasons shared by several entries.
const (
	// kraftFeatures: the finalized features of a KRaft cluster.
	kraftFeatures = "kbroker finalizes transaction.version and group.version; " +
		"metadata.version, kraft.version and eligible.leader.replicas.version describe a KRaft quorum kbroker does not have (issue 11); " +
		"share.version and streams.version the share-group state topic and the Streams group protocol kbroker lacks"
)

var consoleToolsExplained = []toolExplanation{
	// kafka-topics --describe prints the configs that are not defaults;
	// Kafka's min.insync.replicas is a dynamic cluster default.
	{step: "topics-describe", part: "stdout",
		kafkaOnly:   []string{"Topic: tools-t\tTopicId: <topic-id>\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: min.insync.replicas=1,retention.ms=3600000"},
		kbrokerOnly: []string{"Topic: tools-t\tTopicId: <topic-id>\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=3600000"},
		why:         minISRDynamicDefault},
	{step: "topics-describe-altered", part: "stdout",
		kafkaOnly:   []string{"Topic: tools-t\tTopicId: <topic-id>\tPartitionCount: 5\tReplicationFactor: 1\tConfigs: min.insync.replicas=1,retention.ms=3600000"},
		kbrokerOnly: []string{"Topic: tools-t\tTopicId: <topic-id>\tPartitionCount: 5\tReplicationFactor: 1\tConfigs: retention.ms=3600000"},
		why:         minISRDynamicDefault},

	{step: "configs-broker-default-describe", part: "stdout",
		kafkaOnly:   []string{"  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}"},
		kbrokerOnly: nil,
		why:         minISRDynamicDefault},
	{step: "features-describe", part: "stdout",
		kafkaOnly:   []string{"Feature: eligible.leader.replicas.version          SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: <n>", "Feature: kraft.version                             SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 0                Epoch: <n>", "Feature: metadata.version                          SupportedMinVersion: 3.3-IV3          SupportedMaxVersion: 4.4-IV2          FinalizedVersionLevel: 4.4-IV2          Epoch: <n>", "Feature: share.version                             SupportedMinVersion: 0                SupportedMaxVersion: 2                FinalizedVersionLevel: 2                Epoch: <n>", "Feature: streams.version                           SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: <n>"},
		kbrokerOnly: nil,
		why:         kraftFeatures},
}
