package compat

// The matrix rows of Apache Kafka's Java client, kafka-clients, at 4.4.0
// and at 3.9.x (older request versions), each in one JVM running
// kbroker.compat.Client (compat/java/clients). Java's producer is
// idempotent by default; the produce step turns that off, the idempotent
// step keeps the default. The admin step covers the Admin client: describe
// cluster, create/list/describe topics, describe and incrementally alter
// configs, create partitions, delete records, list/describe/alter/delete
// consumer groups and their offsets, delete topics.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// javaClientName is the matrix row name of kafka-clients.
const javaClientName = "Apache Kafka Java client (kafka-clients)"

// javaKafkaVersion is the kafka-clients and kafka-streams version of
// compat/java/clients (kafka.version in compat/java/pom.xml).
const javaKafkaVersion = "4.4.0"

// javaClient drives one JVM through the script protocol of
// matrix_proc_test.go, plus the group protocol for KIP-848.
type javaClient struct {
	jvm       *jvm
	addr      string
	isolation string
	protocol  string // group.protocol: "classic" or "consumer"
}

func newJavaClient(t *testing.T, module string) *javaClient {
	return &javaClient{jvm: startJVM(t, module), protocol: "classic"}
}

func (c *javaClient) setAddr(addr string)       { c.addr = addr }
func (c *javaClient) setIsolation(level string) { c.isolation = level }

func (c *javaClient) use848(on bool) {
	c.protocol = "classic"
	if on {
		c.protocol = "consumer"
	}
}

func (c *javaClient) version(t *testing.T) string {
	return strings.TrimSpace(c.jvm.call(t, "", "version"))
}

func (c *javaClient) admin(t *testing.T, topic string) {
	c.jvm.call(t, "", "admin", c.addr, topic)
}

func (c *javaClient) createTopic(t *testing.T, topic string, partitions int, rf int16) {
	c.jvm.call(t, "", "create", c.addr, topic, strconv.Itoa(partitions), strconv.Itoa(int(rf)))
}

func (c *javaClient) produce(t *testing.T, topic, codec string, idempotent bool, keys []string) []producedRec {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i, k := range keys {
		if err := enc.Encode(jsonRec{K: k, V: valueFor(k), H: headersFor(codec, i)}); err != nil {
			t.Fatal(err)
		}
	}
	idem := "0"
	if idempotent {
		idem = "1"
	}
	return acksOf(parseJSONLines(t, c.jvm.call(t, in.String(), "produce", c.addr, topic, codec, idem)))
}

func (c *javaClient) consume(t *testing.T, topic, group, instanceID string, n int) []consumedRec {
	out := c.jvm.call(t, "", "consume", c.addr, topic, group, instanceID, strconv.Itoa(n), c.isolation, c.protocol)
	var got []consumedRec
	for _, r := range parseJSONLines(t, out) {
		got = append(got, consumedRec{Partition: r.P, Offset: r.O, Key: r.K, Value: r.V, Headers: r.H})
	}
	return got
}

func (c *javaClient) transact(t *testing.T, topic, txnID, group, offsetsTopic string, txns []txnSpec) []producedRec {
	type txnLine struct {
		Commit bool      `json:"commit"`
		Offset int64     `json:"offset"`
		Recs   []jsonRec `json:"recs"`
	}
	var in strings.Builder
	for _, spec := range txns {
		line, err := jsonLine(txnLine{Commit: spec.Commit, Offset: spec.Offset, Recs: txnRecordsFor(spec.Keys)})
		if err != nil {
			t.Fatal(err)
		}
		in.WriteString(line)
	}
	return acksOf(parseJSONLines(t, c.jvm.call(t, in.String(), "transact", c.addr, topic, txnID, group, offsetsTopic)))
}

func acksOf(rs []jsonRec) []producedRec {
	acks := make([]producedRec, 0, len(rs))
	for _, r := range rs {
		acks = append(acks, producedRec{Key: r.K, Partition: r.P, Offset: r.O})
	}
	return acks
}

// javaMatrixCase is the matrix for kafka-clients at the version the
// module's classpath holds.
func javaMatrixCase(t *testing.T, c *javaClient) matrixCase {
	return matrixCase{
		client: javaClientName, version: c.version(t),
		codecs:   []string{"none", "gzip", "snappy", "lz4", "zstd"},
		hasAdmin: true, idempotent: true, static: true, kip848: true, txn: true,
	}
}

func TestMatrixJavaClients44(t *testing.T) {
	c := newJavaClient(t, javaMod44)
	runMatrix(t, c, javaMatrixCase(t, c))
}

// TestMatrixJavaClients39 runs the same driver classes on kafka-clients
// 3.9.x, whose KIP-848 consumer (group.protocol=consumer) is the preview
// that speaks ConsumerGroupHeartbeat v0.
func TestMatrixJavaClients39(t *testing.T) {
	c := newJavaClient(t, javaMod39)
	runMatrix(t, c, javaMatrixCase(t, c))
}
