package metrics

import (
	"encoding/binary"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// traffic holds the counters fed as requests are answered: Kafka's
// RequestMetrics (kafka.network) and BrokerTopicMetrics (kafka.server).
// Per-topic counters carry topic="" for Kafka's all-topics MBean, which
// Prometheus stores as a series without the label, as jmx_exporter shows it.
type traffic struct {
	requests   *prometheus.CounterVec
	errors     *prometheus.CounterVec
	totalTime  *prometheus.HistogramVec
	bytesIn    *prometheus.CounterVec
	bytesOut   *prometheus.CounterVec
	messagesIn *prometheus.CounterVec
	failedProd *prometheus.CounterVec
	failedFet  *prometheus.CounterVec
	totalProd  *prometheus.CounterVec
	totalFet   *prometheus.CounterVec
}

func topicCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_" + name + "_total", Help: help}, []string{"topic"})
}

func newTraffic() *traffic {
	return &traffic{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_network_requestmetrics_requests_total",
			Help: "Requests answered, by API (Kafka's request names; Fetch also as FetchConsumer or FetchFollower) and version."}, []string{"request", "version"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_network_requestmetrics_errors_total",
			Help: "Error codes in responses (each partition's counts, NONE included), by API and error name."}, []string{"request", "error"}),
		totalTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kafka_network_requestmetrics_totaltimems",
			Help:    "Time in ms from a request's decoding to its response being ready, waits (long-poll fetches, acks=all) included; by API.",
			Buckets: []float64{0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}}, []string{"request"}),
		bytesIn:    topicCounter("bytesin", "Record batch bytes appended by client produces, by topic (topic=\"\": all topics)."),
		bytesOut:   topicCounter("bytesout", "Record batch bytes sent to consumers (not followers), by topic (topic=\"\": all topics)."),
		messagesIn: topicCounter("messagesin", "Records appended by client produces, by topic (topic=\"\": all topics)."),
		failedProd: topicCounter("failedproducerequests", "Partition appends that failed other than by the client's addressing or size, by topic."),
		failedFet:  topicCounter("failedfetchrequests", "Partition reads that failed other than by the client's addressing or offset, by topic."),
		totalProd:  topicCounter("totalproducerequests", "Partition appends requested by clients, by topic."),
		totalFet:   topicCounter("totalfetchrequests", "Partition reads requested, by topic."),
	}
}

func (t *traffic) all() []prometheus.Collector {
	return []prometheus.Collector{t.requests, t.errors, t.totalTime, t.bytesIn, t.bytesOut, t.messagesIn, t.failedProd, t.failedFet, t.totalProd, t.totalFet}
}

// Describe implements prometheus.Collector.
func (t *traffic) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range t.all() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (t *traffic) Collect(ch chan<- prometheus.Metric) {
	for _, c := range t.all() {
		c.Collect(ch)
	}
}

// addTopic adds v to a per-topic counter and to its all-topics series.
func addTopic(c *prometheus.CounterVec, topic string, v float64) {
	c.WithLabelValues(topic).Add(v)
	c.WithLabelValues("").Add(v)
}

// Handler wraps next (the API layer) so that every request is counted and
// timed, its response's error codes counted, and produce and fetch traffic
// counted per topic. A panic in next passes through to the network's
// recovery, which counts it (HandlerPanics).
func (m *Metrics) Handler(next network.Handler) network.Handler {
	return &handler{next: next, m: m}
}

type handler struct {
	next network.Handler
	m    *Metrics
}

// Handle implements network.Handler.
func (h *handler) Handle(rc *network.RequestContext, req protocol.Request) kmsg.Response {
	start := time.Now()
	resp := h.next.Handle(rc, req)
	h.m.observe(req, resp, time.Since(start))
	return resp
}

// observe records one answered request. resp is nil for acks=0 produces.
func (m *Metrics) observe(req protocol.Request, resp kmsg.Response, took time.Duration) {
	t := m.traffic
	names := []string{RequestName(req.Header.APIKey)}
	// A Fetch answer holds its records as file ranges (protocol.Spliced):
	// count the response inside, with the ranges' lengths.
	spl, _ := resp.(*protocol.Spliced)
	if spl != nil {
		resp = spl.Response
	}
	switch r := req.Body.(type) {
	case *kmsg.ProduceRequest:
		pr, _ := resp.(*kmsg.ProduceResponse)
		m.countProduce(r, pr)
	case *kmsg.FetchRequest:
		fr, _ := resp.(*kmsg.FetchResponse)
		consumer := fetchReplicaID(r) < 0
		if consumer {
			names = append(names, "FetchConsumer")
		} else {
			names = append(names, "FetchFollower")
		}
		if fr != nil {
			m.countFetch(fr, spl, consumer)
		}
	}
	ms := float64(took) / float64(time.Millisecond)
	version := strconv.Itoa(int(req.Header.APIVersion))
	for _, n := range names {
		t.requests.WithLabelValues(n, version).Inc()
		t.totalTime.WithLabelValues(n).Observe(ms)
	}
	if resp != nil {
		counts := map[int16]int{}
		errorCodes(resp, counts)
		for code, n := range counts {
			t.errors.WithLabelValues(names[0], ErrorName(code)).Add(float64(n))
		}
	}
}

func fetchReplicaID(r *kmsg.FetchRequest) int32 {
	if r.Version >= 15 {
		return r.ReplicaState.ID
	}
	return r.ReplicaID
}

// topicName names a topic of a request or response, by name or (newer
// versions) by id.
func (m *Metrics) topicName(name string, id [16]byte) string {
	if name != "" || m.src.Replicas == nil {
		return name
	}
	if t := m.src.Replicas.TopicByID(id); t != nil {
		return t.Meta.Name
	}
	return ""
}

// countProduce counts a produce's partitions: bytes and records of those
// appended, and the failures Kafka counts as failed produce requests.
// Without a response (acks=0) every partition counts as appended.
func (m *Metrics) countProduce(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
	codes := map[string]map[int32]int16{}
	if resp != nil {
		for _, rt := range resp.Topics {
			name := m.topicName(rt.Topic, rt.TopicID)
			pc := codes[name]
			if pc == nil {
				pc = map[int32]int16{}
				codes[name] = pc
			}
			for _, rp := range rt.Partitions {
				pc[rp.Partition] = rp.ErrorCode
			}
		}
	}
	t := m.traffic
	for _, rt := range req.Topics {
		name := m.topicName(rt.Topic, rt.TopicID)
		if name == "" {
			continue
		}
		var in, msgs, failed int
		for _, rp := range rt.Partitions {
			code := codes[name][rp.Partition]
			switch {
			case code == 0:
				in += len(rp.Records)
				msgs += countRecords(rp.Records)
			case !expectedProduceError[code]:
				failed++
			}
		}
		addTopic(t.totalProd, name, float64(len(rt.Partitions)))
		if in > 0 {
			addTopic(t.bytesIn, name, float64(in))
			addTopic(t.messagesIn, name, float64(msgs))
		}
		if failed > 0 {
			addTopic(t.failedProd, name, float64(failed))
		}
	}
}

// countFetch counts a fetch answer's partitions: the record bytes sent to a
// consumer, and the failures Kafka counts as failed fetch requests.
func (m *Metrics) countFetch(resp *kmsg.FetchResponse, spl *protocol.Spliced, consumer bool) {
	t := m.traffic
	for _, rt := range resp.Topics {
		name := m.topicName(rt.Topic, rt.TopicID)
		if name == "" {
			continue
		}
		var out, failed int
		for _, rp := range rt.Partitions {
			switch {
			case rp.ErrorCode == 0:
				out += int(spl.FieldLen(rp.RecordBatches))
			case !expectedFetchError[rp.ErrorCode]:
				failed++
			}
		}
		addTopic(t.totalFet, name, float64(len(rt.Partitions)))
		if consumer && out > 0 {
			addTopic(t.bytesOut, name, float64(out))
		}
		if failed > 0 {
			addTopic(t.failedFet, name, float64(failed))
		}
	}
}

// expectedProduceError are the errors Kafka's ReplicaManager answers
// without marking failedProduceRequestRate: the client addressed a
// partition this broker does not lead, sent too much, or the disk failed.
// Validation, sequence and epoch errors and NOT_ENOUGH_REPLICAS count.
var expectedProduceError = codeSet(kerr.UnknownTopicOrPartition, kerr.NotLeaderForPartition, kerr.MessageTooLarge,
	kerr.RecordListTooLarge, kerr.CorruptMessage, kerr.KafkaStorageError, kerr.TopicAuthorizationFailed,
	kerr.UnknownTopicID, kerr.RequestTimedOut, kerr.InvalidTopicException)

// expectedFetchError are the errors Kafka's readFromLocalLog answers without
// marking failedFetchRequestRate.
var expectedFetchError = codeSet(kerr.UnknownTopicOrPartition, kerr.NotLeaderForPartition, kerr.UnknownLeaderEpoch,
	kerr.FencedLeaderEpoch, kerr.ReplicaNotAvailable, kerr.KafkaStorageError, kerr.OffsetOutOfRange,
	kerr.InconsistentTopicID, kerr.UnknownTopicID, kerr.TopicAuthorizationFailed)

func codeSet(errs ...*kerr.Error) map[int16]bool {
	out := make(map[int16]bool, len(errs))
	for _, e := range errs {
		out[e.Code] = true
	}
	return out
}

// countRecords sums the record counts of the v2 batches in b (Kafka's
// messagesIn counts records, not batches). It stops at anything that is not
// a whole v2 batch header: the produce was validated, so that is the end.
func countRecords(b []byte) int {
	const headerLen = 61 // up to and including the records count
	n := 0
	for len(b) >= headerLen && b[16] == 2 {
		n += int(int32(binary.BigEndian.Uint32(b[57:61])))
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if size < headerLen || size > len(b) {
			break
		}
		b = b[size:]
	}
	return n
}

// errorCodes adds every ErrorCode field of resp (Kafka's errorCounts: the
// top level and each topic, partition or group) to counts, with a walker
// compiled once per response type.
func errorCodes(resp kmsg.Response, counts map[int16]int) {
	t := reflect.TypeOf(resp)
	w, ok := walkers.Load(t)
	if !ok {
		w, _ = walkers.LoadOrStore(t, compileWalker(t, map[reflect.Type]bool{}))
	}
	if f := w.(walkFunc); f != nil {
		f(reflect.ValueOf(resp), counts)
	}
}

// walkFunc adds the error codes under one value of its type to counts.
type walkFunc func(v reflect.Value, counts map[int16]int)

// walkers caches a walkFunc (nil: the type holds no error code) per
// response type.
var walkers sync.Map

// compileWalker builds the walker of t: only the fields that lead to an
// ErrorCode are visited, and byte slices (records) never. seen guards
// against recursive types, which hold no further codes.
func compileWalker(t reflect.Type, seen map[reflect.Type]bool) walkFunc {
	switch t.Kind() {
	case reflect.Pointer:
		elem := compileWalker(t.Elem(), seen)
		if elem == nil {
			return nil
		}
		return func(v reflect.Value, c map[int16]int) {
			if !v.IsNil() {
				elem(v.Elem(), c)
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		elem := compileWalker(t.Elem(), seen)
		if elem == nil {
			return nil
		}
		return func(v reflect.Value, c map[int16]int) {
			for i := range v.Len() {
				elem(v.Index(i), c)
			}
		}
	case reflect.Struct:
		if seen[t] {
			return nil
		}
		seen[t] = true
		defer delete(seen, t)
		type sub struct {
			i int
			f walkFunc
		}
		var codes []int
		var subs []sub
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
				codes = append(codes, i)
				continue
			}
			if w := compileWalker(f.Type, seen); w != nil {
				subs = append(subs, sub{i, w})
			}
		}
		if len(codes) == 0 && len(subs) == 0 {
			return nil
		}
		return func(v reflect.Value, c map[int16]int) {
			for _, i := range codes {
				c[int16(v.Field(i).Int())]++
			}
			for _, s := range subs {
				s.f(v.Field(s.i), c)
			}
		}
	}
	return nil
}

// ErrorName is Kafka's name of an error code (Errors.name()): NONE for 0.
func ErrorName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return "UNKNOWN_" + strconv.Itoa(int(code))
}

// requestNameFixes turn kmsg's spellings into Kafka's ApiKeys names.
var requestNameFixes = strings.NewReplacer("ISR", "Isr", "SASL", "Sasl", "IDs", "Ids", "ID", "Id", "ACLs", "Acls", "SCRAM", "Scram")

// RequestName is Kafka's name of an API key (ApiKeys.name), as the request
// label of RequestMetrics.
func RequestName(key int16) string {
	n := kmsg.NameForKey(key)
	if n == "" || n == "Unknown" {
		return "Unknown" + strconv.Itoa(int(key))
	}
	return requestNameFixes.Replace(n)
}
