package compat

// The ACL authorizer as the script clients meet it, in the pattern of
// acl_test.go: kafkajs (compat/js/kafkajs_acl.js) and kafka-python
// (compat/py/kafka_python_acl.py), over SCRAM-SHA-256 as User:alice, a
// denied produce, a denied consume, a denied group join and (kafkajs only;
// kafka-python 2.0 has no transactions) a denied transactional id, each
// failing with the Kafka error the client reports and writing nothing.
// Where a client hides the Kafka error of a denial, the test says so and
// also denies one step later, where the client does report it.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// aclScriptCase is one denied request of an ACL script (compat/py/*_acl.py,
// compat/js/kafkajs_acl.js): setup grants what alice needs to reach the
// denial, args are the script's command after ADDR USER PASSWORD, want is
// the Kafka error name the script must print.
type aclScriptCase struct {
	name  string
	setup func(topic string)
	args  func(topic string) []string
	want  string
}

// runACLScript runs each case on topic prefix+name against s's SASL
// listener as alice, and checks the error the client printed and that the
// topic stays empty. A script that exits non-zero (no error reported, or a
// record read) fails the test with its output.
func runACLScript(t *testing.T, s *aclSetup, c *scriptClient, client, prefix string, cases []aclScriptCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topic := prefix + tc.name
			createTopic(t, s.adm, topic, 1, nil)
			tc.setup(topic)
			args := append([]string{s.saslAddr, saslUser, saslScramPass}, tc.args(topic)...)
			if got := strings.TrimSpace(c.run(t, "", args...)); got != tc.want {
				t.Fatalf("%s %s: %q, want %s", client, tc.name, got, tc.want)
			}
			s.noData(topic)
		})
	}
}

// TestACLKafkaJS: kafkajs 2.2.4 drops the error of a denied FindCoordinator
// (BrokerPool.withBroker swallows it) and reports only "Failed to find group
// coordinator", as it does against Kafka. So "group" and "transact" grant
// DESCRIBE on the group / transactional id, which lets FindCoordinator
// through, and the denial is JoinGroup's (READ on the group) or
// InitProducerId's (WRITE on the transactional id), with its Kafka error;
// the "-lookup" cases grant nothing there and take kafkajs's own error.
func TestACLKafkaJS(t *testing.T) {
	js := kafkajsClient(t)
	// Logging in over SASL SCRAM is the matrix's SASL cell.
	recordCap(t, "kafkajs", js.version(t), capSASL)
	c := &scriptClient{argv: []string{js.argv[0], filepath.Join(js.dir, "kafkajs_acl.js")}, dir: js.dir}
	s := startACLBroker(t)
	const noCoordinator = "KafkaJSGroupCoordinatorNotFound: Failed to find group coordinator"
	runACLScript(t, s, c, "kafkajs", "acl-js-", []aclScriptCase{
		{"produce", func(string) {}, func(topic string) []string { return []string{"produce", topic} }, "TOPIC_AUTHORIZATION_FAILED"},
		{"consume", func(string) { s.allow("group", "acl-js-c-group", kadm.OpRead) },
			func(topic string) []string { return []string{"consume", topic, "acl-js-c-group"} }, "TOPIC_AUTHORIZATION_FAILED"},
		{"group", func(topic string) {
			s.allow("topic", topic, kadm.OpRead)
			s.allow("group", "acl-js-g-group", kadm.OpDescribe)
		}, func(topic string) []string { return []string{"consume", topic, "acl-js-g-group"} }, "GROUP_AUTHORIZATION_FAILED"},
		{"group-lookup", func(topic string) { s.allow("topic", topic, kadm.OpRead) },
			func(topic string) []string { return []string{"consume", topic, "acl-js-gl-group"} }, noCoordinator},
		{"transact", func(topic string) {
			s.allow("topic", topic, kadm.OpWrite)
			s.allow("txn", "acl-js-tx", kadm.OpDescribe)
		}, func(topic string) []string { return []string{"transact", topic, "acl-js-tx"} }, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"},
		{"transact-lookup", func(topic string) { s.allow("topic", topic, kadm.OpWrite) },
			func(topic string) []string { return []string{"transact", topic, "acl-js-tl"} }, noCoordinator},
	})
}

// TestACLKafkaPython has no transactional id case: kafka-python 2.0 has no
// transactional producer. kafka-python 2.0.2 never hands the application a
// TOPIC_AUTHORIZATION_FAILED from Metadata when it asked for one topic
// (ClusterMetadata.update_metadata takes such an answer as a failed update:
// the producer retries until max_block_ms and raises KafkaTimeoutError, the
// group consumer retries silently), as against Kafka. So "produce" and
// "consume" grant DESCRIBE on the topic, and the denial is the Produce's or
// the Fetch's, which kafka-python raises with its Kafka error. The group is
// denied twice: at FindCoordinator (nothing granted on it) and at JoinGroup
// (DESCRIBE granted, READ missing).
func TestACLKafkaPython(t *testing.T) {
	c := pythonClient(t, "kafka_python_acl.py", "kafka", "python3-kafka")
	// Logging in over SASL SCRAM is the matrix's SASL cell.
	recordCap(t, "kafka-python", pythonClient(t, "kafka_python_client.py", "kafka", "python3-kafka").version(t), capSASL)
	s := startACLBroker(t)
	describe := func(topic string) { s.allow("topic", topic, kadm.OpDescribe) }
	runACLScript(t, s, c, "kafka-python", "acl-kpy-", []aclScriptCase{
		{"produce", describe, func(topic string) []string { return []string{"produce", topic} }, "TOPIC_AUTHORIZATION_FAILED"},
		{"consume", func(topic string) {
			describe(topic)
			s.allow("group", "acl-kpy-c-group", kadm.OpRead)
		}, func(topic string) []string { return []string{"consume", topic, "acl-kpy-c-group"} }, "TOPIC_AUTHORIZATION_FAILED"},
		{"group", func(topic string) { s.allow("topic", topic, kadm.OpRead) },
			func(topic string) []string { return []string{"consume", topic, "acl-kpy-g-group"} }, "GROUP_AUTHORIZATION_FAILED"},
		{"group-join", func(topic string) {
			s.allow("topic", topic, kadm.OpRead)
			s.allow("group", "acl-kpy-gj-group", kadm.OpDescribe)
		}, func(topic string) []string { return []string{"consume", topic, "acl-kpy-gj-group"} }, "GROUP_AUTHORIZATION_FAILED"},
	})
}
