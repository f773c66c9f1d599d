package compat

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMetricsEndpoint runs a real kbroker with its HTTP listener, produces
// and consumes with franz-go, and checks that /metrics moved by the right
// amounts: bytes in equals the partition's log size (a single node stores
// the produced batches as they came), messages in the record count, bytes
// out at least the log (every batch was fetched), lag the produced records
// less the committed offset; and that /healthz, /readyz and the disabled
// /debug/pprof/ answer as they should.
func TestMetricsEndpoint(t *testing.T) {
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startBroker(t, t.TempDir(), "http.listeners=http://"+httpAddr)
	base := "http://" + httpAddr
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, string(body)
	}
	if code, body := get("/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	// The Kafka port accepts a moment before Start marks the broker ready.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get("/readyz")
		if code == http.StatusOK {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q", code, body)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition
	}
	if code, _ := get("/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("/debug/pprof/ without http.pprof.enable: %d, want 404", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic, group, records, committed = "metered", "metered-group", 25, 18
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	before := scrape(t, get)
	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte(strings.Repeat("v", 10+i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for got := 0; got < records; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	offsets := kadm.Offsets{}
	offsets.AddOffset(topic, 0, committed, -1)
	if _, err := adm.CommitOffsets(ctx, group, offsets); err != nil {
		t.Fatal(err)
	}

	after := scrape(t, get)
	topicL := map[string]string{"topic": topic}
	logSize := after.value("kafka_log_log_size", map[string]string{"topic": topic, "partition": "0"})
	if logSize <= 0 {
		t.Fatalf("kafka_log_log_size of %s-0 is %v", topic, logSize)
	}
	delta := func(name string, labels map[string]string) float64 {
		return after.value(name, labels) - before.value(name, labels)
	}
	t.Logf("log size %v; bytes in %v, messages in %v, bytes out %v; lag %v",
		logSize, delta("kafka_server_brokertopicmetrics_bytesin_total", topicL),
		delta("kafka_server_brokertopicmetrics_messagesin_total", topicL),
		delta("kafka_server_brokertopicmetrics_bytesout_total", topicL),
		after.value("kafka_consumergroup_lag", map[string]string{"consumergroup": group}))
	if got := delta("kafka_server_brokertopicmetrics_bytesin_total", topicL); got != logSize {
		t.Errorf("bytes in of %s moved by %v, want the log size %v", topic, got, logSize)
	}
	if got := delta("kafka_server_brokertopicmetrics_messagesin_total", topicL); got != records {
		t.Errorf("messages in of %s moved by %v, want %d", topic, got, records)
	}
	if got := delta("kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": ""}); got < records {
		t.Errorf("messages in of all topics moved by %v, want at least %d", got, records)
	}
	if got := delta("kafka_server_brokertopicmetrics_bytesout_total", topicL); got < logSize {
		t.Errorf("bytes out of %s moved by %v, want at least the log size %v", topic, got, logSize)
	}
	if got := after.value("kafka_server_brokertopicmetrics_failedproducerequests_total", topicL); got != 0 {
		t.Errorf("failed produce requests of %s: %v", topic, got)
	}
	groupL := map[string]string{"consumergroup": group, "topic": topic, "partition": "0"}
	if got := after.value("kafka_consumergroup_lag", groupL); got != records-committed {
		t.Errorf("lag of %s on %s-0 is %v, want %d", group, topic, got, records-committed)
	}
	if got := after.value("kafka_consumergroup_current_offset", groupL); got != committed {
		t.Errorf("committed offset of %s on %s-0 is %v, want %d", group, topic, got, committed)
	}
	if got := delta("kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}); got < 1 {
		t.Errorf("Produce requests moved by %v", got)
	}
	if got := delta("kafka_network_requestmetrics_requests_total", map[string]string{"request": "FetchConsumer"}); got < 1 {
		t.Errorf("FetchConsumer requests moved by %v", got)
	}
	if got := delta("kafka_network_requestmetrics_errors_total", map[string]string{"request": "Produce", "error": "NONE"}); got < 1 {
		t.Errorf("Produce errors NONE moved by %v", got)
	}
	if got := delta("kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Produce"}); got < 1 {
		t.Errorf("Produce total time observations moved by %v", got)
	}
	if got := after.value("kafka_server_replicamanager_partitioncount", nil); got < 2 { // metered-0 and __consumer_offsets
		t.Errorf("partition count %v", got)
	}
	if pc, lc := after.value("kafka_server_replicamanager_partitioncount", nil), after.value("kafka_server_replicamanager_leadercount", nil); pc != lc {
		t.Errorf("a single node leads every partition it hosts: partitions %v, leaders %v", pc, lc)
	}
	if got := after.value("kafka_server_replicamanager_underreplicatedpartitions", nil); got != 0 {
		t.Errorf("under-replicated partitions on a single node: %v", got)
	}
	if got := after.value("kafka_server_socket_server_metrics_connection_count", map[string]string{"listener": "PLAINTEXT"}); got < 2 {
		t.Errorf("PLAINTEXT connections %v with two clients connected", got)
	}
	if got := after.value("go_goroutines", nil); got <= 0 {
		t.Errorf("go_goroutines %v: the Go collector is missing", got)
	}
}

// metricSet is one scrape, parsed.
type metricSet map[string]*dto.MetricFamily

func scrape(t *testing.T, get func(string) (int, string)) metricSet {
	t.Helper()
	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %q", code, body)
	}
	var parser expfmt.TextParser
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value is the metric's value (a histogram's count) whose labels include
// labels (an empty value: the label is absent or empty); 0 when none.
func (s metricSet) value(name string, labels map[string]string) float64 {
	fam := s[name]
	if fam == nil {
		return 0
	}
	var sum float64
	for _, m := range fam.Metric {
		have := map[string]string{}
		for _, lp := range m.Label {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range labels {
			if have[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum
}
