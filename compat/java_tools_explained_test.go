package compat

// The differences from Apache Kafka 4.4.0 that TestJavaConsoleTools accepts,
// each with its reason: the masked lines only one broker printed, per step
// and stream (or the exit codes). Anything else that differs fails the
// step, and an entry whose difference is gone fails the scenario. Missing
// features name the issue that adds them (kafka_diff_explained_test.go).

// Reasons shared by several entries.
const (
	// dynamicBrokerConfigs: AlterConfigs and IncrementalAlterConfigs on
	// BROKER resources, per broker and as the cluster default.
	dynamicBrokerConfigs = "kbroker has no dynamic broker configs yet (issue 15): it refuses them with INVALID_REQUEST"
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

	// kafka-configs: brokers.
	{step: "configs-broker-alter", part: "stdout",
		kafkaOnly:   []string{"Completed updating config for broker 0."},
		kbrokerOnly: nil,
		why:         dynamicBrokerConfigs},
	{step: "configs-broker-alter", part: "stderr",
		kafkaOnly:   nil,
		kbrokerOnly: []string{"\tat java.base/java.util.concurrent.CompletableFuture.get(CompletableFuture.java:2096)", "\tat java.base/java.util.concurrent.CompletableFuture.reportGet(CompletableFuture.java:396)", "Caused by: org.apache.kafka.common.errors.InvalidRequestException: Cannot update these configs dynamically: log.cleaner.threads", "Error while executing config command with args '--bootstrap-server <host:port> --entity-type brokers --entity-name 0 --alter --add-config log.cleaner.threads=2'", "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: Cannot update these configs dynamically: log.cleaner.threads"},
		why:         dynamicBrokerConfigs},
	{step: "configs-broker-alter", part: "exit",
		kafkaOnly:   []string{"0"},
		kbrokerOnly: []string{"1"},
		why:         dynamicBrokerConfigs},
	{step: "configs-broker-default-alter", part: "stdout",
		kafkaOnly:   []string{"Completed updating default config for brokers in the cluster."},
		kbrokerOnly: nil,
		why:         dynamicBrokerConfigs},
	{step: "configs-broker-default-alter", part: "stderr",
		kafkaOnly:   nil,
		kbrokerOnly: []string{"\tat java.base/java.util.concurrent.CompletableFuture.get(CompletableFuture.java:2096)", "\tat java.base/java.util.concurrent.CompletableFuture.reportGet(CompletableFuture.java:396)", "Caused by: org.apache.kafka.common.errors.InvalidRequestException: Cannot update these configs dynamically: log.retention.ms", "Error while executing config command with args '--bootstrap-server <host:port> --entity-type brokers --entity-default --alter --add-config log.retention.ms=100000000'", "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: Cannot update these configs dynamically: log.retention.ms"},
		why:         dynamicBrokerConfigs},
	{step: "configs-broker-default-alter", part: "exit",
		kafkaOnly:   []string{"0"},
		kbrokerOnly: []string{"1"},
		why:         dynamicBrokerConfigs},
	{step: "configs-broker-describe-after-alter", part: "stdout",
		kafkaOnly:   []string{"  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}"},
		kbrokerOnly: nil,
		why:         dynamicBrokerConfigs},
	{step: "features-describe", part: "stdout",
		kafkaOnly:   []string{"Feature: eligible.leader.replicas.version          SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: <n>", "Feature: kraft.version                             SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 0                Epoch: <n>", "Feature: metadata.version                          SupportedMinVersion: 3.3-IV3          SupportedMaxVersion: 4.4-IV2          FinalizedVersionLevel: 4.4-IV2          Epoch: <n>", "Feature: share.version                             SupportedMinVersion: 0                SupportedMaxVersion: 2                FinalizedVersionLevel: 2                Epoch: <n>", "Feature: streams.version                           SupportedMinVersion: 0                SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: <n>"},
		kbrokerOnly: nil,
		why:         kraftFeatures},
}
