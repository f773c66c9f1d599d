package compat

// The console-tools scenario of TestJavaConsoleTools: each tool's everyday
// flows, in the order a user would type them.

const (
	toolsTopic = "tools-t"
	toolsGroup = "tools-g"
	toolsDel   = "tools-del"
	toolsTxn   = "tools-txn"
	toolsHang  = "tools-hang"
	toolsPerf  = "tools-perf"
	perfCount  = "20000"
)

// producerInput is what a user types into kafka-console-producer with
// parse.key and parse.headers: headers, key and value separated by tabs.
const producerInput = "h1:a,h2:b\tk1\tv1\n" +
	"h1:c\tk2\tv2\n" +
	"h1:d\tk3\tv3\n" +
	"h1:e\tk4\tv4\n" +
	"h1:f\tk5\tv5\n" +
	"h1:g\tk6\tv6\n"

// consumerPrint are the console consumer's options to print everything.
var consumerPrint = []string{"--property", "print.key=true", "--property", "print.headers=true",
	"--property", "print.partition=true", "--property", "print.offset=true"}

func consoleToolSteps(dirs []string) []toolStep {
	B := "{B}"
	cc := func(extra ...string) []string {
		return append(append([]string{"--bootstrap-server", B}, consumerPrint...), extra...)
	}
	return []toolStep{
		// kafka-topics
		{name: "topics-create", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--create", "--topic", toolsTopic,
			"--partitions", "3", "--replication-factor", "1", "--config", "retention.ms=3600000"},
			check: wantOutput("Created topic " + toolsTopic)},
		{name: "topics-create-exists", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--create", "--topic", toolsTopic, "--partitions", "3"},
			check: both(wantExit(1), wantOutput("already exists"))},
		{name: "topics-list", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--list"}, check: wantOutput(toolsTopic)},
		{name: "topics-describe", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--describe", "--topic", toolsTopic},
			check: wantOutput("PartitionCount: 3", "retention.ms=3600000")},
		{name: "topics-alter-partitions", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--alter", "--topic", toolsTopic, "--partitions", "5"}},
		{name: "topics-describe-altered", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--describe", "--topic", toolsTopic},
			check: wantOutput("PartitionCount: 5")},
		{name: "topics-describe-unknown", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--describe", "--topic", "no-such-topic"},
			check: wantExit(1)},

		// kafka-console-producer / kafka-console-consumer
		{name: "console-producer-keys-headers", tool: "kafka-console-producer.sh", stdin: producerInput,
			args:  []string{"--bootstrap-server", B, "--topic", toolsTopic, "--property", "parse.key=true", "--property", "parse.headers=true"},
			check: wantExit(0)},
		{name: "console-consumer-group-from-beginning", tool: "kafka-console-consumer.sh",
			args:  cc("--topic", toolsTopic, "--from-beginning", "--group", toolsGroup, "--max-messages", "6"),
			check: both(wantExit(0), countRecords(6), wantOutput("Processed a total of 6 messages", "h1:a,h2:b\tk1\tv1"))},
		{name: "console-producer-more", tool: "kafka-console-producer.sh", stdin: "kx1\tx1\nkx2\tx2\nkx3\tx3\n",
			args: []string{"--bootstrap-server", B, "--topic", toolsTopic, "--producer-property", "acks=all", "--reader-property", "parse.key=true"}},

		// kafka-consumer-groups
		{name: "consumer-groups-list", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--list"}, check: wantOutput(toolsGroup)},
		{name: "consumer-groups-describe-lag", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--describe", "--group", toolsGroup},
			check: wantOutput("LAG", "has no active members")},
		{name: "consumer-groups-reset-earliest", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--reset-offsets",
			"--group", toolsGroup, "--topic", toolsTopic, "--to-earliest", "--execute"}, check: wantOutput("NEW-OFFSET")},
		{name: "consumer-groups-reset-shift-by", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--reset-offsets",
			"--group", toolsGroup, "--topic", toolsTopic, "--shift-by", "1", "--execute"}},
		{name: "consumer-groups-reset-datetime", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--reset-offsets",
			"--group", toolsGroup, "--topic", toolsTopic, "--to-datetime", "2000-01-01T00:00:00.000", "--execute"}},
		{name: "consumer-groups-reset-latest-dry-run", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--reset-offsets",
			"--group", toolsGroup, "--all-topics", "--to-latest", "--dry-run"}},
		{name: "consumer-groups-describe-offsets", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--describe", "--group", toolsGroup, "--offsets"}},
		{name: "console-consumer-resumes-from-reset", tool: "kafka-console-consumer.sh",
			args:  cc("--topic", toolsTopic, "--group", toolsGroup, "--max-messages", "9"),
			check: both(wantExit(0), countRecords(9))},
		{name: "consumer-groups-describe-members-state", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--describe", "--group", toolsGroup, "--state"}},
		{name: "consumer-groups-delete", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--delete", "--group", toolsGroup},
			check: wantOutput("Deletion of requested consumer groups ('" + toolsGroup + "') was successful.")},
		{name: "consumer-groups-describe-deleted", tool: "kafka-consumer-groups.sh", args: []string{"--bootstrap-server", B, "--describe", "--group", toolsGroup}},

		// kafka-get-offsets, kafka-delete-records
		{name: "get-offsets-latest", tool: "kafka-get-offsets.sh", args: []string{"--bootstrap-server", B, "--topic", toolsTopic}},
		{name: "get-offsets-earliest", tool: "kafka-get-offsets.sh", args: []string{"--bootstrap-server", B, "--topic", toolsTopic, "--time", "-2"}},
		{name: "delete-records-setup", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--create", "--topic", toolsDel, "--partitions", "1"}},
		{name: "delete-records-produce", tool: "kafka-console-producer.sh", stdin: "a\nb\nc\nd\ne\n", args: []string{"--bootstrap-server", B, "--topic", toolsDel}},
		{name: "delete-records-json", do: writeScratch(dirs, "delete.json", `{"partitions":[{"topic":"`+toolsDel+`","partition":0,"offset":3}],"version":1}`)},
		{name: "delete-records", tool: "kafka-delete-records.sh", args: []string{"--bootstrap-server", B, "--offset-json-file", "{DIR}/delete.json"},
			check: wantOutput("low_watermark: 3")},
		{name: "delete-records-get-offsets", tool: "kafka-get-offsets.sh", args: []string{"--bootstrap-server", B, "--topic", toolsDel, "--time", "-2"},
			check: wantOutput(toolsDel + ":0:3")},
		{name: "delete-records-consume", tool: "kafka-console-consumer.sh", args: cc("--topic", toolsDel, "--from-beginning", "--max-messages", "2"),
			check: wantOutput("Offset:3", "Offset:4")},

		// kafka-configs: topics, brokers, groups
		{name: "configs-topic-alter", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "topics", "--entity-name", toolsTopic,
			"--alter", "--add-config", "retention.ms=86400000,segment.bytes=1048576"}},
		{name: "configs-topic-describe", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "topics", "--entity-name", toolsTopic, "--describe"},
			check: wantOutput("retention.ms=86400000", "segment.bytes=1048576")},
		{name: "configs-topic-delete-config", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "topics", "--entity-name", toolsTopic,
			"--alter", "--delete-config", "segment.bytes"}},
		{name: "configs-topic-describe-after-delete", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "topics", "--entity-name", toolsTopic, "--describe"}},
		{name: "configs-topic-invalid", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "topics", "--entity-name", toolsTopic,
			"--alter", "--add-config", "cleanup.policy=bogus"}, check: wantExit(1)},
		{name: "configs-broker-describe", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "brokers", "--entity-name", "0", "--describe"}},
		{name: "configs-broker-alter", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "brokers", "--entity-name", "0",
			"--alter", "--add-config", "log.cleaner.threads=2"}},
		{name: "configs-broker-default-alter", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "brokers", "--entity-default",
			"--alter", "--add-config", "log.retention.ms=100000000"}},
		{name: "configs-broker-describe-after-alter", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "brokers", "--entity-name", "0", "--describe"},
			check: wantOutput("log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}")},
		{name: "configs-broker-default-describe", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "brokers", "--entity-default", "--describe"},
			check: wantOutput("log.retention.ms=100000000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=100000000}")},
		{name: "configs-broker-static-refused", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "brokers", "--entity-name", "0",
			"--alter", "--add-config", "log.dirs=/elsewhere"}, check: wantExit(1)},
		{name: "configs-broker-default-delete", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "brokers", "--entity-default",
			"--alter", "--delete-config", "log.retention.ms"}},
		{name: "configs-group-alter", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "groups", "--entity-name", toolsGroup,
			"--alter", "--add-config", "consumer.session.timeout.ms=50000"}},
		{name: "configs-group-describe", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "groups", "--entity-name", toolsGroup, "--describe"}},

		// kafka-configs: client quotas of users, clients and both, and
		// their defaults (removed again: a quota left would throttle the
		// steps after).
		{name: "configs-user-quota-alter", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--entity-name", "alice",
			"--alter", "--add-config", "producer_byte_rate=1048576,request_percentage=50"}, check: wantExit(0)},
		{name: "configs-user-client-quota-alter", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--entity-name", "alice",
			"--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config", "consumer_byte_rate=2048"}, check: wantExit(0)},
		{name: "configs-client-default-quota-alter", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "clients", "--entity-default",
			"--alter", "--add-config", "producer_byte_rate=4096000"}, check: wantExit(0)},
		{name: "configs-user-quota-describe", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--entity-name", "alice", "--describe"},
			check: wantOutput("producer_byte_rate=1048576", "request_percentage=50")},
		{name: "configs-user-client-quota-describe", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--entity-name", "alice",
			"--entity-type", "clients", "--entity-name", "app", "--describe"}, check: wantOutput("consumer_byte_rate=2048")},
		{name: "configs-clients-quota-describe", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "clients", "--describe"},
			check: wantOutput("producer_byte_rate=4096000")},
		{name: "configs-users-quota-describe", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--describe"}},
		{name: "configs-user-quota-invalid", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--entity-name", "alice",
			"--alter", "--add-config", "producer_byte_rate=-5"}},
		{name: "configs-user-quota-delete", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--entity-name", "alice",
			"--alter", "--delete-config", "producer_byte_rate,request_percentage"}, check: wantExit(0)},
		{name: "configs-user-client-quota-delete", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--entity-name", "alice",
			"--entity-type", "clients", "--entity-name", "app", "--alter", "--delete-config", "consumer_byte_rate"}, check: wantExit(0)},
		{name: "configs-client-default-quota-delete", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "clients", "--entity-default",
			"--alter", "--delete-config", "producer_byte_rate"}, check: wantExit(0)},
		{name: "configs-quotas-describe-after-delete", tool: "kafka-configs.sh", args: []string{"--bootstrap-server", B, "--entity-type", "users", "--entity-name", "alice", "--describe"}},

		// kafka-transactions: a hanging transaction, found and aborted
		{name: "transactions-topic", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--create", "--topic", toolsTxn, "--partitions", "1"}},
		{name: "transactions-hang", do: hangTransaction(toolsTxn, toolsHang, 3)},
		{name: "transactions-plain-record", tool: "kafka-console-producer.sh", stdin: "after-the-hang\n", args: []string{"--bootstrap-server", B, "--topic", toolsTxn}},
		{name: "transactions-list", tool: "kafka-transactions.sh", args: []string{"--bootstrap-server", B, "list"}, masks: []toolMask{maskNumbers},
			check: wantOutput(toolsHang, "Ongoing")},
		{name: "transactions-describe", tool: "kafka-transactions.sh", args: []string{"--bootstrap-server", B, "describe", "--transactional-id", toolsHang},
			masks: []toolMask{maskNumbers}, check: wantOutput("Ongoing", toolsTxn+"-0")},
		{name: "transactions-describe-producers", tool: "kafka-transactions.sh", args: []string{"--bootstrap-server", B, "describe-producers", "--topic", toolsTxn, "--partition", "0"},
			masks: []toolMask{maskNumbers}},
		{name: "transactions-find-hanging", tool: "kafka-transactions.sh", args: []string{"--bootstrap-server", B, "find-hanging", "--broker-id", "0"}},
		{name: "transactions-read-committed-blocked", tool: "kafka-console-consumer.sh",
			args:  cc("--topic", toolsTxn, "--from-beginning", "--isolation-level", "read_committed", "--timeout-ms", "3000"),
			check: wantOutput("Processed a total of 0 messages")},
		{name: "transactions-abort", tool: "kafka-transactions.sh", args: []string{"--bootstrap-server", B, "abort", "--topic", toolsTxn, "--partition", "0", "--start-offset", "0"},
			check: wantExit(0)},
		{name: "transactions-read-committed", tool: "kafka-console-consumer.sh",
			args: cc("--topic", toolsTxn, "--from-beginning", "--isolation-level", "read_committed", "--max-messages", "1",
				"--timeout-ms", "20000"),
			check: both(wantExit(0), wantOutput("after-the-hang"))},
		{name: "transactions-read-uncommitted", tool: "kafka-console-consumer.sh",
			args:  cc("--topic", toolsTxn, "--from-beginning", "--isolation-level", "read_uncommitted", "--max-messages", "4"),
			check: both(wantExit(0), wantOutput("hanging-0", "hanging-2", "after-the-hang"))},

		// kafka-leader-election, kafka-log-dirs, kafka-broker-api-versions, kafka-features
		{name: "leader-election-preferred", tool: "kafka-leader-election.sh", args: []string{"--bootstrap-server", B, "--election-type", "preferred", "--all-topic-partitions"}},
		{name: "leader-election-unclean-one", tool: "kafka-leader-election.sh", args: []string{"--bootstrap-server", B, "--election-type", "unclean", "--topic", toolsTopic, "--partition", "0"}},
		{name: "log-dirs-describe", tool: "kafka-log-dirs.sh", args: []string{"--bootstrap-server", B, "--describe", "--topic-list", toolsTopic},
			check: wantOutput(`"partition":"` + toolsTopic + `-0"`)},
		{name: "broker-api-versions", tool: "kafka-broker-api-versions.sh", args: []string{"--bootstrap-server", B},
			noDiff: "each broker advertises its own version ranges; TestJavaApiVersionsTable compares what matters",
			check:  both(wantExit(0), wantOutput("Produce(0):", "Fetch(1):", "ApiVersions(18):", "[usable: "))},
		{name: "features-describe", tool: "kafka-features.sh", args: []string{"--bootstrap-server", B, "describe"}, masks: []toolMask{mask(`Epoch: \d+`, "Epoch: <n>")}},

		// Tools for what only a KRaft cluster or an authorizer has: the
		// user must get a clear error from kbroker (without
		// authorizer.class.name, kafka-acls gets Kafka's SECURITY_DISABLED). Listing reassignments
		// works on one node too (none), as on Kafka.
		{name: "metadata-quorum", tool: "kafka-metadata-quorum.sh", args: []string{"--bootstrap-server", B, "describe", "--status"},
			noDiff: "kbroker has no KRaft quorum to describe",
			check:  onlyKbroker(both(wantExit(1), wantOutput("does not support DESCRIBE_QUORUM")))},
		{name: "acls-list", tool: "kafka-acls.sh", args: []string{"--bootstrap-server", B, "--list"},
			check: both(wantExit(1), wantOutput("SecurityDisabledException", "No Authorizer is configured on the broker"))},
		{name: "reassign-partitions-list", tool: "kafka-reassign-partitions.sh", args: []string{"--bootstrap-server", B, "--list"},
			check: both(wantExit(0), wantOutput("No partition reassignments found."))},

		// kafka-producer-perf-test, kafka-consumer-perf-test
		{name: "producer-perf-test", tool: "kafka-producer-perf-test.sh", args: []string{"--topic", toolsPerf, "--num-records", perfCount,
			"--record-size", "1024", "--throughput", "-1", "--producer-props", "bootstrap.servers=" + B, "acks=all"},
			noDiff: "throughput and latencies", check: both(wantExit(0), wantOutput(perfCount+" records sent"))},
		{name: "consumer-perf-test", tool: "kafka-consumer-perf-test.sh", args: []string{"--bootstrap-server", B, "--topic", toolsPerf, "--messages", perfCount},
			noDiff: "throughput", check: both(wantExit(0), wantOutput(", "+perfCount+", "))},

		// kafka-topics delete
		{name: "topics-delete", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--delete", "--topic", toolsTopic}},
		{name: "topics-list-after-delete", tool: "kafka-topics.sh", args: []string{"--bootstrap-server", B, "--list", "--exclude-internal"}},
	}
}
