package metrics

import (
	"io"
	"os"
	"testing"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func batch(t *testing.T, n int, codec records.Codec) []byte {
	t.Helper()
	recs := make([]records.Record, n)
	for i := range recs {
		recs[i] = records.Record{OffsetDelta: int32(i), Value: []byte("value")}
	}
	b, err := records.Build(records.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCountRecords(t *testing.T) {
	a, b := batch(t, 3, records.CodecNone), batch(t, 5, records.CodecGzip)
	both := append(append([]byte{}, a...), b...)
	for _, c := range []struct {
		name string
		in   []byte
		want int
	}{
		{"one", a, 3},
		{"compressed", b, 5},
		{"two batches", both, 8},
		{"truncated second", both[:len(a)+30], 3},
		{"empty", nil, 0},
		{"not v2", append([]byte{}, make([]byte, 70)...), 0},
	} {
		if got := countRecords(c.in); got != c.want {
			t.Errorf("%s: %d records, want %d", c.name, got, c.want)
		}
	}
}

func TestRequestName(t *testing.T) {
	for key, want := range map[int16]string{
		0: "Produce", 1: "Fetch", 4: "LeaderAndIsr", 17: "SaslHandshake", 18: "ApiVersions", 22: "InitProducerId",
		29: "DescribeAcls", 36: "SaslAuthenticate", 50: "DescribeUserScramCredentials", 67: "AllocateProducerIds", 32000: "Unknown32000",
	} {
		if got := RequestName(key); got != want {
			t.Errorf("key %d: %q, want %q", key, got, want)
		}
	}
	if got := ErrorName(kerr.InvalidRecord.Code); got != "INVALID_RECORD" {
		t.Errorf("ErrorName(INVALID_RECORD) = %q", got)
	}
	if got := ErrorName(0); got != "NONE" {
		t.Errorf("ErrorName(0) = %q", got)
	}
}

// serve runs one request through the metrics handler, answered by resp.
func serve(m *Metrics, req kmsg.Request, resp kmsg.Response) {
	h := m.Handler(network.HandlerFunc(func(*network.RequestContext, protocol.Request) kmsg.Response { return resp }))
	h.Handle(&network.RequestContext{}, protocol.Request{Header: protocol.RequestHeader{APIKey: req.Key(), APIVersion: req.GetVersion()}, Body: req})
}

func TestHandlerCountsProduce(t *testing.T) {
	m := New(Sources{})
	data := batch(t, 4, records.CodecNone)
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	for i := range int32(2) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = i
		rp.Records = data
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	st := kmsg.NewProduceResponseTopic()
	st.Topic = "t"
	ok, bad := kmsg.NewProduceResponseTopicPartition(), kmsg.NewProduceResponseTopicPartition()
	ok.Partition, bad.Partition, bad.ErrorCode = 0, 1, kerr.InvalidRecord.Code
	st.Partitions = append(st.Partitions, ok, bad)
	resp.Topics = append(resp.Topics, st)
	serve(m, req, resp)

	tr := m.traffic
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"bytes in t", testutil.ToFloat64(tr.bytesIn.WithLabelValues("t")), float64(len(data))},
		{"bytes in all", testutil.ToFloat64(tr.bytesIn.WithLabelValues("")), float64(len(data))},
		{"messages in t", testutil.ToFloat64(tr.messagesIn.WithLabelValues("t")), 4},
		{"failed produce t", testutil.ToFloat64(tr.failedProd.WithLabelValues("t")), 1},
		{"total produce t", testutil.ToFloat64(tr.totalProd.WithLabelValues("t")), 2},
		{"requests", testutil.ToFloat64(tr.requests.WithLabelValues("Produce", "9")), 1},
		{"errors NONE", testutil.ToFloat64(tr.errors.WithLabelValues("Produce", "NONE")), 1},
		{"errors INVALID_RECORD", testutil.ToFloat64(tr.errors.WithLabelValues("Produce", "INVALID_RECORD")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}

	// acks=0: no response; every partition counts as appended.
	serve(m, req, nil)
	if got := testutil.ToFloat64(tr.messagesIn.WithLabelValues("t")); got != 4+8 {
		t.Errorf("messages in after an acks=0 produce: %v, want 12", got)
	}
}

func TestHandlerCountsFetch(t *testing.T) {
	m := New(Sources{})
	fetch := func(replica int32, code int16, data []byte) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.ReplicaID = replica
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.ErrorCode, rp.RecordBatches = code, data
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		serve(m, req, resp)
	}
	fetch(-1, 0, make([]byte, 100))
	fetch(2, 0, make([]byte, 1000))              // a follower: replication, not bytes out
	fetch(-1, kerr.OffsetOutOfRange.Code, nil)   // expected: not a failed fetch
	fetch(-1, kerr.UnknownServerError.Code, nil) // unexpected: a failed fetch
	tr := m.traffic
	if got := testutil.ToFloat64(tr.bytesOut.WithLabelValues("t")); got != 100 {
		t.Errorf("bytes out %v, want 100 (the consumer's only)", got)
	}
	if got := testutil.ToFloat64(tr.failedFet.WithLabelValues("t")); got != 1 {
		t.Errorf("failed fetches %v, want 1", got)
	}
	if got := testutil.ToFloat64(tr.requests.WithLabelValues("FetchConsumer", "11")); got != 3 {
		t.Errorf("FetchConsumer requests %v, want 3", got)
	}
	if got := testutil.ToFloat64(tr.requests.WithLabelValues("FetchFollower", "11")); got != 1 {
		t.Errorf("FetchFollower requests %v, want 1", got)
	}
	if got := testutil.ToFloat64(tr.requests.WithLabelValues("Fetch", "11")); got != 4 {
		t.Errorf("Fetch requests %v, want 4", got)
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "kafka_network_requestmetrics_totaltimems"); err != nil || n != 3 {
		t.Errorf("totaltimems series: %d (%v), want Fetch, FetchConsumer, FetchFollower", n, err)
	}
}

// BenchmarkHandlerProduce is the wrapper's cost on a one-partition produce
// (counting, timing, the reflective walk of the response's error codes).
func BenchmarkHandlerProduce(b *testing.B) {
	m := New(Sources{})
	recs := make([]records.Record, 10)
	data, _ := records.Build(records.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = data
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	st := kmsg.NewProduceResponseTopic()
	st.Topic = "t"
	st.Partitions = append(st.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, st)
	b.ReportAllocs()
	for b.Loop() {
		serve(m, req, resp)
	}
}

// BenchmarkHandlerFetch100 is the wrapper's cost on a consumer fetch
// answering 100 partitions.
func BenchmarkHandlerFetch100(b *testing.B) {
	m := New(Sources{})
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	for i := range int32(100) {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = i
		rp.RecordBatches = make([]byte, 1024)
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	b.ReportAllocs()
	for b.Loop() {
		serve(m, req, resp)
	}
}

// TestErrorCodesNested: every ErrorCode at any depth counts, and the
// compiled walker is reused for the next response of the type.
func TestErrorCodesNested(t *testing.T) {
	resp := kmsg.NewPtrOffsetFetchResponse()
	g := kmsg.NewOffsetFetchResponseGroup()
	g.ErrorCode = kerr.GroupAuthorizationFailed.Code
	gt := kmsg.NewOffsetFetchResponseGroupTopic()
	for _, code := range []int16{0, 0, kerr.UnknownTopicOrPartition.Code} {
		p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		p.ErrorCode = code
		gt.Partitions = append(gt.Partitions, p)
	}
	g.Topics = append(g.Topics, gt)
	resp.Groups = append(resp.Groups, g)
	for range 2 {
		counts := map[int16]int{}
		errorCodes(resp, counts)
		want := map[int16]int{0: 3, kerr.GroupAuthorizationFailed.Code: 1, kerr.UnknownTopicOrPartition.Code: 1} // 0: the top level too
		for code, n := range want {
			if counts[code] != n {
				t.Fatalf("counts %v, want %v", counts, want)
			}
		}
	}
}

// lenSection is a protocol.Section of n bytes, for counting.
type lenSection struct{ n int64 }

func (s lenSection) Len() int64                              { return s.n }
func (s lenSection) WriteTo(io.Writer) (int64, error)        { return 0, nil }
func (s lenSection) ReadAt(p []byte, off int64) (int, error) { return len(p), nil }
func (s lenSection) File() (*os.File, int64, bool)           { return nil, 0, false }
func (s lenSection) Release()                                {}

// TestHandlerCountsSplicedFetch: a Fetch answered with file ranges
// (protocol.Spliced) counts the ranges' bytes out and its errors, as the
// same answer in memory would.
func TestHandlerCountsSplicedFetch(t *testing.T) {
	m := New(Sources{})
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	spl := protocol.NewSpliced(resp)
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	for i, code := range []int16{0, 0, kerr.UnknownServerError.Code} {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode = int32(i), code
		if code == 0 {
			rp.RecordBatches = spl.Add(lenSection{5000})
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	serve(m, req, spl)
	tr := m.traffic
	if got := testutil.ToFloat64(tr.bytesOut.WithLabelValues("t")); got != 10000 {
		t.Errorf("bytes out %v, want 10000 (the ranges' lengths)", got)
	}
	if got := testutil.ToFloat64(tr.failedFet.WithLabelValues("t")); got != 1 {
		t.Errorf("failed fetches %v, want 1", got)
	}
	if got := testutil.ToFloat64(tr.errors.WithLabelValues("Fetch", "UNKNOWN_SERVER_ERROR")); got != 1 {
		t.Errorf("UNKNOWN_SERVER_ERROR count %v, want 1", got)
	}
}
