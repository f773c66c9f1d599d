package console

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestLagRows(t *testing.T) {
	a, b := tp{"a", 0}, tp{"a", 1}
	c := tp{"b", 0}
	rows, total := lagRows(
		map[tp]int64{a: 3, b: 10, c: 5},
		map[tp]owner{a: {Member: "m1"}, tp{"d", 0}: {Member: "m2"}},
		map[tp]int64{a: 10, b: 7, tp{"d", 0}: 4},
	)
	want := []lagRow{
		{Topic: "a", Partition: 0, Committed: 3, End: 10, Lag: 7, owner: owner{Member: "m1"}},
		{Topic: "a", Partition: 1, Committed: 10, End: 7, Lag: 0},                              // committed past the end: 0, not negative
		{Topic: "b", Partition: 0, Committed: 5, End: -1, Lag: -1},                             // end unknown
		{Topic: "d", Partition: 0, Committed: -1, End: 4, Lag: -1, owner: owner{Member: "m2"}}, // assigned, never committed
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
	if total != 7 {
		t.Errorf("total lag = %d, want 7 (unknown lags are not summed)", total)
	}
}

func TestRenderValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		kind string
		text string
	}{
		{"null", nil, "null", "null"},
		{"empty", []byte{}, "text", ""},
		{"text", []byte("héllo\nworld"), "text", "héllo\nworld"},
		{"json object", []byte(` {"a":1,"b":[true]}`), "json", "{\n  \"a\": 1,\n  \"b\": [\n    true\n  ]\n}"},
		{"json scalar is text", []byte(`42`), "text", "42"},
		{"broken json is text", []byte(`{"a":`), "text", `{"a":`},
		{"binary", []byte{0, 1, 'A', 0xff}, "hex", "00000000  00 01 41 ff                                       |..A.|\n"},
		{"control char", []byte("a\x07b"), "hex", "00000000  61 07 62                                          |a.b|\n"},
		{"invalid utf8", []byte{'a', 0xc3}, "hex", "00000000  61 c3                                             |a.|\n"},
	} {
		v := renderValue(tc.in)
		if v.Kind != tc.kind || v.Text != tc.text {
			t.Errorf("%s: renderValue(%q) = %s %q, want %s %q", tc.name, tc.in, v.Kind, v.Text, tc.kind, tc.text)
		}
	}
	big := renderValue([]byte(strings.Repeat("x", maxShown+10)))
	if len(big.Text) != maxShown || big.Cut != 10 || big.Size != maxShown+10 {
		t.Errorf("large value: shown %d, cut %d, size %d", len(big.Text), big.Cut, big.Size)
	}
}

func TestSumThroughput(t *testing.T) {
	reg := prometheus.NewRegistry()
	in := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_bytesin_total"}, []string{"topic"})
	msgs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_messagesin_total"}, []string{"topic"})
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_network_requestmetrics_requests_total"}, []string{"request", "version"})
	reg.MustRegister(in, msgs, reqs)
	in.WithLabelValues("t").Add(100)
	in.WithLabelValues("").Add(100) // the all-topics series
	msgs.WithLabelValues("t").Add(3)
	msgs.WithLabelValues("u").Add(4)
	msgs.WithLabelValues("").Add(7)
	reqs.WithLabelValues("Produce", "9").Add(2)
	reqs.WithLabelValues("Fetch", "16").Add(5)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := sumThroughput(fams)
	if got.BytesIn != 100 || got.MessagesIn != 7 || got.Requests != 7 || got.BytesOut != 0 {
		t.Errorf("sumThroughput = %+v, want bytesIn 100 (not per topic too), messagesIn 7, requests 7", got)
	}
}

// newTestConsole serves a console over a kfake cluster.
func newTestConsole(t *testing.T, opts ...kfake.Opt) (*httptest.Server, *kgo.Client, *Console) {
	t.Helper()
	cluster, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	seed := cluster.ListenAddrs()[0]
	c, err := New(Config{Bootstrap: func() (Endpoint, error) { return Endpoint{Addr: seed}, nil }, Metrics: prometheus.NewRegistry(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return srv, cl, c
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, u string, form url.Values, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// TestPages fills a kfake cluster and checks what the pages show: the
// topic, a group's lag after a commit, a record's key, header and JSON value.
func TestPages(t *testing.T) {
	srv, cl, _ := newTestConsole(t, kfake.SeedTopics(2, "orders"))
	ctx := context.Background()
	for i := range 5 {
		r := &kgo.Record{Topic: "orders", Partition: 0, Key: []byte("key-" + string(rune('a'+i))),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t-1")}}, Value: []byte(`{"n":` + string(rune('0'+i)) + `}`)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var os kadm.Offsets
	os.AddOffset("orders", 0, 2, -1)
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "billing", os); err != nil {
		t.Fatal(err)
	}

	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "odd/group?#", os); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, srv.URL+"/groups")
	if !strings.Contains(body, `href="/groups/odd%2Fgroup%3F%23"`) {
		t.Errorf("/groups: the odd group's link is not one escaped path segment:\n%s", body)
	}
	if code, body := get(t, srv.URL+"/groups/odd%2Fgroup%3F%23"); code != 200 || !strings.Contains(body, "<h1>odd/group?#</h1>") {
		t.Errorf("/groups/odd%%2Fgroup%%3F%%23: %d\n%s", code, body)
	}

	code, body := get(t, srv.URL+"/topics")
	if code != 200 || !strings.Contains(body, `href="/topics/orders">orders</a>`) {
		t.Fatalf("/topics: %d\n%s", code, body)
	}
	code, body = get(t, srv.URL+"/topics/orders")
	if code != 200 || !strings.Contains(body, "<td>0</td><td>5</td>") { // log start 0, end 5 of partition 0
		t.Errorf("/topics/orders: %d\n%s", code, body)
	}
	code, body = get(t, srv.URL+"/groups/billing")
	if code != 200 || !strings.Contains(body, `<td class="lag">3</td>`) || !strings.Contains(body, `id="total-lag">3<`) {
		t.Errorf("/groups/billing: want lag 3 (end 5 - committed 2): %d\n%s", code, body)
	}
	code, body = get(t, srv.URL+"/groups")
	if code != 200 || !strings.Contains(body, `href="/groups/billing"`) {
		t.Errorf("/groups: %d\n%s", code, body)
	}
	code, body = get(t, srv.URL+"/messages?topic=orders&partition=0&offset=3")
	if code != 200 || !strings.Contains(body, ">key-d</pre>") || !strings.Contains(body, "<b>trace</b>") ||
		!strings.Contains(body, "{\n  &#34;n&#34;: 3\n}") || strings.Contains(body, "key-c") {
		t.Errorf("/messages from offset 3: want records 3 and 4 with key, header, pretty JSON: %d\n%s", code, body)
	}
	code, body = get(t, srv.URL+"/")
	if code != 200 || !strings.Contains(body, `id="brokers"`) || !strings.Contains(body, `id="throughput"`) {
		t.Errorf("/: %d\n%s", code, body)
	}
	if code, _ = get(t, srv.URL+"/static/console.js"); code != 200 {
		t.Errorf("/static/console.js: %d", code)
	}
	if code, body = get(t, srv.URL+"/api/throughput"); code != 200 || !strings.Contains(body, `"bytesIn":0`) {
		t.Errorf("/api/throughput: %d %s", code, body)
	}
}

// TestActionCSRFAndConfirm: a POST without the token, with a wrong one or
// from another origin is refused; with it, the first POST only asks for a
// confirmation and the confirmed one acts.
func TestActionCSRFAndConfirm(t *testing.T) {
	srv, cl, _ := newTestConsole(t)
	_, body := get(t, srv.URL+"/topics")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in /topics:\n%s", body)
	}
	tok := m[1]
	form := url.Values{"topic": {"fresh"}, "partitions": {"2"}}
	// exists asks a client of its own: kgo caches metadata.
	exists := func() bool {
		fresh, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...))
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		ts, err := kadm.NewClient(fresh).ListTopics(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ts.Has("fresh")
	}

	if code, _ := post(t, srv.URL+"/actions/create-topic", form, nil); code != http.StatusForbidden {
		t.Errorf("no token: %d, want 403", code)
	}
	form.Set("csrf", strings.Repeat("0", len(tok)))
	form.Set("confirm", "yes")
	if code, _ := post(t, srv.URL+"/actions/create-topic", form, nil); code != http.StatusForbidden {
		t.Errorf("wrong token: %d, want 403", code)
	}
	form.Set("csrf", tok)
	if code, _ := post(t, srv.URL+"/actions/create-topic", form, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("other origin: %d, want 403", code)
	}
	if exists() {
		t.Fatal("a refused action created the topic")
	}

	form.Del("confirm")
	code, body := post(t, srv.URL+"/actions/create-topic", form, map[string]string{"Origin": srv.URL})
	if code != 200 || !strings.Contains(body, `id="summary">Create topic &#34;fresh&#34; with partitions 2`) {
		t.Fatalf("first POST: want a confirm page: %d\n%s", code, body)
	}
	if exists() {
		t.Fatal("the topic exists before the confirmation")
	}
	form.Set("confirm", "yes")
	code, body = post(t, srv.URL+"/actions/create-topic", form, nil)
	if code != 200 || !strings.Contains(body, `id="result">Created topic`) || !exists() {
		t.Fatalf("confirmed POST: %d\n%s", code, body)
	}
	// The console's own pages show it at once (its metadata cache is short).
	deadline := time.Now().Add(2 * time.Second)
	for _, body = get(t, srv.URL+"/topics"); !strings.Contains(body, `href="/topics/fresh"`); _, body = get(t, srv.URL+"/topics") {
		if time.Now().After(deadline) {
			t.Fatalf("/topics does not list the created topic:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	form = url.Values{"csrf": {tok}, "topic": {"fresh"}, "count": {"x"}}
	if code, body = post(t, srv.URL+"/actions/add-partitions", form, nil); code != http.StatusBadRequest || !strings.Contains(body, "not a positive number") {
		t.Errorf("bad form: %d\n%s", code, body)
	}
}

// TestResetOffsets resets a group's offsets to the earliest and checks the
// commit.
func TestResetOffsets(t *testing.T) {
	srv, cl, c := newTestConsole(t, kfake.SeedTopics(1, "t"))
	ctx := context.Background()
	for range 4 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	var os kadm.Offsets
	os.AddOffset("t", 0, 4, -1)
	if err := adm.CommitAllOffsets(ctx, "g", os); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"csrf": {c.csrf}, "group": {"g"}, "topic": {"t"}, "to": {"offset"}, "value": {"1"}, "confirm": {"yes"}}
	code, body := post(t, srv.URL+"/actions/reset-offsets", form, nil)
	if code != 200 || !strings.Contains(body, `id="result"`) {
		t.Fatalf("reset: %d\n%s", code, body)
	}
	got, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("t", 0); o.At != 1 {
		t.Errorf("committed offset after reset = %d, want 1", o.At)
	}

	// With a member in the group the reset is refused, as Kafka's tool does.
	member, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	pollCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for member.PollFetches(pollCtx).NumRecords() == 0 { // joined once it fetched
		if pollCtx.Err() != nil {
			t.Fatal("the member consumed nothing")
		}
	}
	form.Set("value", "0")
	code, body = post(t, srv.URL+"/actions/reset-offsets", form, nil)
	if code != http.StatusBadGateway || !strings.Contains(body, "stop its consumers first") {
		t.Fatalf("reset with a member: %d\n%s", code, body)
	}
	if got, _ = adm.FetchOffsets(ctx, "g"); func() int64 { o, _ := got.Lookup("t", 0); return o.At }() == 0 {
		t.Error("the refused reset committed offset 0")
	}
}

// TestTopicActionsAndTimestampBrowse: add partitions and delete records
// act once confirmed; the browser finds records by timestamp.
func TestTopicActionsAndTimestampBrowse(t *testing.T) {
	srv, cl, c := newTestConsole(t, kfake.SeedTopics(1, "t"))
	ctx := context.Background()
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 4 {
		r := &kgo.Record{Topic: "t", Partition: 0, Value: []byte{byte('a' + i)}, Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	code, body := get(t, srv.URL+"/messages?topic=t&partition=0&timestamp="+url.QueryEscape("2023-11-14T22:13:22Z")) // base + 2 s
	if code != 200 || !strings.Contains(body, "showing 2 records from offset 2") || !strings.Contains(body, ">c</pre>") {
		t.Errorf("browse by timestamp: %d\n%s", code, body)
	}
	if code, body = get(t, srv.URL+"/messages?topic=t&partition=x"); code != 200 || !strings.Contains(body, "not a partition number") {
		t.Errorf("bad partition: %d\n%s", code, body)
	}

	form := url.Values{"csrf": {c.csrf}, "topic": {"t"}, "partition": {"0"}, "offset": {"3"}, "confirm": {"yes"}}
	if code, body = post(t, srv.URL+"/actions/delete-records", form, nil); code != 200 || !strings.Contains(body, "log start offset of t-0 is now 3") {
		t.Errorf("delete records: %d\n%s", code, body)
	}
	form = url.Values{"csrf": {c.csrf}, "topic": {"t"}, "count": {"3"}, "confirm": {"yes"}}
	if code, body = post(t, srv.URL+"/actions/add-partitions", form, nil); code != 200 || !strings.Contains(body, "now has 3 partitions") {
		t.Errorf("add partitions: %d\n%s", code, body)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, body = get(t, srv.URL+"/topics/t"); !strings.Contains(body, "3 partitions ·") || !strings.Contains(body, "<td>3</td><td>4</td>"); _, body = get(t, srv.URL+"/topics/t") {
		if time.Now().After(deadline) {
			t.Fatalf("/topics/t: want 3 partitions and partition 0 from 3 to 4:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTimestampMillis(t *testing.T) {
	for in, want := range map[string]int64{
		"1700000000000":             1_700_000_000_000,
		"2023-11-14T22:13:20Z":      1_700_000_000_000,
		"2023-11-14T22:13:20.5Z":    1_700_000_000_500,
		"2023-11-14T22:13":          1_699_999_980_000,
		"2023-11-14T23:13:20+01:00": 1_700_000_000_000,
	} {
		if got, err := timestampMillis(in); err != nil || got != want {
			t.Errorf("timestampMillis(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := timestampMillis("yesterday"); err == nil {
		t.Error("timestampMillis(yesterday): no error")
	}
}

func TestBrowseUnknownPartition(t *testing.T) {
	srv, _, _ := newTestConsole(t, kfake.SeedTopics(1, "t"))
	if code, body := get(t, srv.URL+"/messages?topic=t&partition=7"); code != 200 || !strings.Contains(body, "topic &#34;t&#34; has no partition 7") {
		t.Errorf("partition 7 of a one-partition topic: %d\n%s", code, body)
	}
}
