// Package compat drives real Kafka clients and raw TCP connections against
// real kbroker processes. Apache Kafka's behaviour is the specification:
// every assertion here is something a Kafka broker does.
//
// TestMain builds cmd/kbroker once into a temporary directory; each test then
// starts its own broker process on its own loopback port and data directory
// with startBroker, and every process is killed by t.Cleanup at the latest.
//
// What is tested:
//
//   - the client matrix (matrix*_test.go, scripts in py/ and js/): franz-go,
//     sarama, kafka-go and confluent-kafka-go in-process; kcat,
//     kafka-python, confluent-kafka python and kafkajs as subprocesses. Each
//     creates topics, produces in every codec it has, consumes in a group,
//     commits and resumes, and where it has them: idempotent producing,
//     static membership, KIP-848, its admin API, and transactions (one
//     committed and one aborted, with offsets sent to a group; its own
//     consumer read_committed and read_uncommitted; matrix_txn_test.go).
//     The outcome per client and capability goes to results.json, which
//     ./cmd/compatreport turns into COMPATIBILITY.md;
//   - exactly-once consume-transform-produce chains that survive a SIGKILL
//     of the broker and of the transforming client: franz-go's
//     GroupTransactSession (txn_test.go), kafkajs as Node processes
//     (txn_kafkajs_test.go) and confluent-kafka-go (txn_confluent_test.go);
//   - Apache Kafka's Java side (java_*_test.go, kafka_diff*_test.go; the
//     Maven project in java/): kafka-clients 4.4.0 and 3.9.2 through the
//     matrix in one long-lived JVM per test and over SASL; Kafka Streams'
//     exactly-once word count across a SIGKILL of the Streams instance and
//     of the broker; Kafka's console tools (java/bin/*.sh) run in lockstep
//     against kbroker and a real single-node Apache Kafka 4.4.0
//     (java_kafka_test.go) with their masked output compared; and
//     differential protocol tests, kmsg requests sent to both brokers with
//     the answers compared field by field;
//   - franz-go's own pkg/kgo integration suite (franzsuite_test.go), the
//     wire protocol with raw frames (protocol_test.go, produce_raw_test.go),
//     and restarts, crashes and error codes with franz-go and sarama;
//   - the HTTP listener (metrics_test.go): /metrics after a franz-go produce,
//     consume and commit (bytes and messages in, bytes out, lag), /healthz,
//     /readyz. The harness disables the listener for every other broker, so
//     that brokers running at once do not contend for its port.
//
// Run everything, installing the clients first if needed, with
// scripts/test.sh; run just these tests with
//
//	go test -count=1 ./compat/
//
// and the throughput comparison with kfake and raw loopback with
//
//	go test ./compat/ -run '^$' -bench BenchmarkProduceConsume -benchtime 3x
//
// and Kafka's perf-test tools against Apache Kafka, kbroker and kfake with
//
//	go test ./compat/ -run '^$' -bench BenchmarkJavaPerfTools -benchtime 1x
package compat
