// Package compat drives real Kafka clients (franz-go, sarama, kcat) and raw
// TCP connections against real kbroker processes. Apache Kafka's behaviour is
// the specification: every assertion here is something a Kafka broker does.
//
// TestMain builds cmd/kbroker once into a temporary directory; each test then
// starts its own broker process on its own loopback port and data directory
// with startBroker, and every process is killed by t.Cleanup at the latest.
//
// Run everything, installing kcat first if needed, with scripts/test.sh; run
// just these tests with
//
//	go test -count=1 ./compat/
//
// and the throughput comparison with kfake and raw loopback with
//
//	go test ./compat/ -run '^$' -bench BenchmarkProduceConsume -benchtime 3x
package compat
