package restproxy_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type record struct {
	Topic     string `json:"topic"`
	Key       any    `json:"key"`
	Value     any    `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

type instanceRef struct {
	InstanceID string `json:"instance_id"`
	BaseURI    string `json:"base_uri"`
}

// newInstance creates an instance in group with the create body and
// returns its path.
func (e *env) newInstance(group, body string) string {
	e.t.Helper()
	var ref instanceRef
	e.must(http.StatusOK, &ref, "POST", "/consumers/"+group, ctV2, body)
	path := "/consumers/" + group + "/instances/" + ref.InstanceID
	if ref.BaseURI != e.base+path {
		e.t.Fatalf("base_uri %q, want %q", ref.BaseURI, e.base+path)
	}
	return path
}

// readUntil reads records of the instance until n arrived.
func (e *env) readUntil(path, accept string, n int) []record {
	e.t.Helper()
	var out []record
	e.eventually(fmt.Sprintf("%d records at %s", n, path), func() bool {
		var rs []record
		e.must(http.StatusOK, &rs, "GET", path+"/records?timeout=200", "", "", "Accept", accept)
		out = append(out, rs...)
		return len(out) >= n
	})
	return out
}

func (e *env) produceBinary(topic string, partition int32, values ...string) {
	e.t.Helper()
	recs := make([]string, len(values))
	for i, v := range values {
		recs[i] = fmt.Sprintf(`{"value":%q,"partition":%d}`, b64(v), partition)
	}
	var pr produceReply
	r := e.must(http.StatusOK, &pr, "POST", "/topics/"+topic, ctBinary, `{"records":[`+strings.Join(recs, ",")+`]}`)
	for _, o := range pr.Offsets {
		if o.ErrorCode != nil {
			e.t.Fatalf("producing to %s: %s", topic, r)
		}
	}
}

// TestV2ConsumerLifecycle walks an instance through subscribe, read,
// commit, committed offsets, seek and delete.
func TestV2ConsumerLifecycle(t *testing.T) {
	e := start(t, nil)
	e.createTopic("life", 1)
	e.produceBinary("life", 0, "a", "b", "c")

	path := e.newInstance("g1", `{"name":"c1","format":"binary","auto.offset.reset":"earliest","auto.commit.enable":"false"}`)
	wantError(t, "same name again", e.do("POST", "/consumers/g1", ctV2, `{"name":"c1"}`), 409, 40902)
	wantError(t, "read before subscribing", e.do("GET", path+"/records", "", "", "Accept", ctBinary), 409, 40903)
	e.must(http.StatusNoContent, nil, "POST", path+"/subscription", ctV2, `{"topics":["life"]}`)
	var sub struct {
		Topics []string `json:"topics"`
	}
	e.must(http.StatusOK, &sub, "GET", path+"/subscription", "", "")
	if len(sub.Topics) != 1 || sub.Topics[0] != "life" {
		t.Errorf("subscription: %+v", sub)
	}
	rs := e.readUntil(path, ctBinary, 3)
	for i, r := range rs {
		if r.Topic != "life" || r.Partition != 0 || r.Offset != int64(i) || r.Value != b64(string(rune('a'+i))) || r.Key != nil {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	wantError(t, "json read of a binary instance", e.do("GET", path+"/records", "", "", "Accept", ctJSON), 406, 40601)

	var asg struct {
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		} `json:"partitions"`
	}
	e.must(http.StatusOK, &asg, "GET", path+"/assignments", "", "")
	if len(asg.Partitions) != 1 || asg.Partitions[0].Topic != "life" {
		t.Errorf("assignments: %+v", asg)
	}

	// Commit the last record read (Confluent commits offset+1), then all.
	e.must(http.StatusOK, nil, "POST", path+"/offsets", ctV2, `{"offsets":[{"topic":"life","partition":0,"offset":1,"metadata":"batch-7"}]}`)
	committed := func() (int64, string) {
		var co struct {
			Offsets []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Offset    int64  `json:"offset"`
				Metadata  string `json:"metadata"`
			} `json:"offsets"`
		}
		e.must(http.StatusOK, &co, "GET", path+"/offsets", ctV2, `{"partitions":[{"topic":"life","partition":0}]}`)
		if len(co.Offsets) != 1 {
			t.Fatalf("committed offsets: %+v", co)
		}
		return co.Offsets[0].Offset, co.Offsets[0].Metadata
	}
	// The subscribed instance commits as a group member; the body's
	// metadata is kept, as Confluent's proxy keeps it.
	if got, md := committed(); got != 2 || md != "batch-7" {
		t.Errorf("committed %d %q after committing offset 1 with metadata, want 2 \"batch-7\"", got, md)
	}
	e.must(http.StatusOK, nil, "POST", path+"/offsets", "", "")
	if got, md := committed(); got != 3 || md != "" {
		t.Errorf("committed %d %q after committing everything read, want 3 and no metadata", got, md)
	}
	// The group's offset is what a native client of the group sees.
	if got := e.kafkaCommitted("g1", "life", 0); got != 3 {
		t.Errorf("native FetchOffsets: %d, want 3", got)
	}

	e.must(http.StatusNoContent, nil, "POST", path+"/positions/beginning", ctV2, `{"partitions":[{"topic":"life","partition":0}]}`)
	if again := e.readUntil(path, ctBinary, 3); again[0].Offset != 0 {
		t.Errorf("after seeking to the beginning: %+v", again)
	}
	e.must(http.StatusNoContent, nil, "POST", path+"/positions", ctV2, `{"offsets":[{"topic":"life","partition":0,"offset":2}]}`)
	if again := e.readUntil(path, ctBinary, 1); again[0].Offset != 2 {
		t.Errorf("after seeking to 2: %+v", again)
	}
	wantError(t, "seek of a partition not assigned", e.do("POST", path+"/positions", ctV2, `{"offsets":[{"topic":"other","partition":0,"offset":2}]}`), 409, 40903)
	e.must(http.StatusNoContent, nil, "POST", path+"/positions/end", ctV2, `{"partitions":[{"topic":"life","partition":0}]}`)
	var none []record
	e.must(http.StatusOK, &none, "GET", path+"/records?timeout=50", "", "", "Accept", ctBinary)
	if len(none) != 0 {
		t.Errorf("read after seeking to the end: %+v", none)
	}

	e.must(http.StatusNoContent, nil, "DELETE", path+"/subscription", "", "")
	e.must(http.StatusNoContent, nil, "DELETE", path, "", "")
	wantError(t, "deleted instance", e.do("GET", path+"/subscription", "", ""), 404, 40403)
	wantError(t, "delete twice", e.do("DELETE", path, "", ""), 404, 40403)
}

// TestV2ConsumerAssignJSON: an instance assigned a partition reads json
// records from the group's committed offset, bounded by max_bytes.
func TestV2ConsumerAssignJSON(t *testing.T) {
	e := start(t, nil)
	e.createTopic("js", 2)
	e.must(http.StatusOK, nil, "POST", "/topics/js/partitions/1", ctJSON,
		`{"records":[{"key":"k","value":{"n":0}},{"value":{"n":1}},{"value":{"n":2}},{"value":{"n":3}}]}`)
	// The group committed offset 1 of partition 1 before.
	adm := kadm.NewClient(e.kafka())
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "js", Partition: 1, At: 1, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(e.ctx, "gj", offs); err != nil {
		t.Fatal(err)
	}
	path := e.newInstance("gj", `{"format":"json","auto.offset.reset":"earliest"}`)
	e.must(http.StatusNoContent, nil, "POST", path+"/assignments", ctV2, `{"partitions":[{"topic":"js","partition":1}]}`)
	wantError(t, "subscribe while assigned", e.do("POST", path+"/subscription", ctV2, `{"topics":["js"]}`), 409, 40903)
	// max_bytes 1 returns one record per read.
	var rs []record
	e.eventually("a record", func() bool {
		e.must(http.StatusOK, &rs, "GET", path+"/records?timeout=200&max_bytes=1", "", "", "Accept", ctJSON)
		return len(rs) > 0
	})
	if len(rs) != 1 || rs[0].Offset != 1 || fmt.Sprint(rs[0].Value) != "map[n:1]" {
		t.Fatalf("first read: %+v", rs)
	}
	rest := e.readUntil(path, ctJSON, 2)
	if rest[0].Offset != 2 || rest[1].Offset != 3 {
		t.Errorf("rest: %+v", rest)
	}
	e.must(http.StatusOK, nil, "POST", path+"/offsets", ctV2, "")
	if got := e.kafkaCommitted("gj", "js", 1); got != 4 {
		t.Errorf("committed %d after an assigned commit, want 4", got)
	}
}

// TestV2ConsumerBadInput: unknown instances, formats and configs, wrong
// content types and malformed bodies.
func TestV2ConsumerBadInput(t *testing.T) {
	e := start(t, nil)
	wantError(t, "unknown instance", e.do("GET", "/consumers/g/instances/nope/records", "", "", "Accept", ctBinary), 404, 40403)
	wantError(t, "unknown instance commit", e.do("POST", "/consumers/g/instances/nope/offsets", ctV2, ""), 404, 40403)
	wantError(t, "unknown instance delete", e.do("DELETE", "/consumers/g/instances/nope", "", ""), 404, 40403)
	wantError(t, "unknown format", e.do("POST", "/consumers/g", ctV2, `{"format":"xml"}`), 422, 42204)
	wantError(t, "bad reset", e.do("POST", "/consumers/g", ctV2, `{"auto.offset.reset":"sometime"}`), 422, 42204)
	wantError(t, "bad json", e.do("POST", "/consumers/g", ctV2, `{"name":`), 422, 42203)
	wantError(t, "wrong content type", e.do("POST", "/consumers/g", "text/plain", `{"name":"x"}`), 415, 415)
	path := e.newInstance("g", "")
	wantError(t, "empty subscription", e.do("POST", path+"/subscription", ctV2, `{}`), 422, 42206)
	wantError(t, "subscription as text", e.do("POST", path+"/subscription", "text/plain", `{"topics":["a"]}`), 415, 415)
	wantError(t, "bad timeout", e.do("GET", path+"/records?timeout=soon", "", "", "Accept", ctBinary), 400, 400)
}

// TestV2ConsumerRebalance: an HTTP instance and a franz-go consumer in one
// group share the partitions: each partition has one owner, each member
// reads only its own, and together they read every record.
func TestV2ConsumerRebalance(t *testing.T) {
	e := start(t, nil)
	const parts = 4
	e.createTopic("shared", parts)
	path := e.newInstance("mixed", `{"format":"binary","auto.offset.reset":"earliest"}`)
	e.must(http.StatusNoContent, nil, "POST", path+"/subscription", ctV2, `{"topics":["shared"]}`)
	httpOwned := func() map[int32]bool {
		var asg struct {
			Partitions []struct {
				Partition int32 `json:"partition"`
			} `json:"partitions"`
		}
		e.must(http.StatusOK, &asg, "GET", path+"/assignments", "", "")
		m := map[int32]bool{}
		for _, p := range asg.Partitions {
			m[p.Partition] = true
		}
		return m
	}
	e.eventually("the HTTP instance owning every partition", func() bool { return len(httpOwned()) == parts })

	var mu sync.Mutex
	native := map[int32]bool{}
	cl := e.kafka(kgo.ConsumerGroup("mixed"), kgo.ConsumeTopics("shared"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range m["shared"] {
				native[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range m["shared"] {
				delete(native, p)
			}
		}))
	nativeRead := map[string]int32{}
	var nativeMu sync.Mutex
	pollCtx, stopPoll := context.WithCancel(e.ctx)
	var polling sync.WaitGroup
	polling.Add(1)
	go func() { // the native member polls, as a consumer does
		defer polling.Done()
		for pollCtx.Err() == nil {
			fs := cl.PollFetches(pollCtx)
			fs.EachRecord(func(r *kgo.Record) {
				nativeMu.Lock()
				nativeRead[string(r.Value)] = r.Partition
				nativeMu.Unlock()
			})
		}
	}()
	defer func() { stopPoll(); polling.Wait() }()

	var httpSide map[int32]bool
	e.eventually("the partitions split between the two members", func() bool {
		httpSide = httpOwned()
		mu.Lock()
		defer mu.Unlock()
		if len(httpSide) == 0 || len(native) == 0 || len(httpSide)+len(native) != parts {
			return false
		}
		for p := range native {
			if httpSide[p] {
				return false
			}
		}
		return true
	})

	const n = 40
	values := map[string]bool{}
	for i := range n {
		v := fmt.Sprintf("r%d", i)
		values[v] = true
		e.produceBinary("shared", int32(i%parts), v)
	}
	httpRead := map[string]int32{}
	e.eventually("every record read by one member", func() bool {
		var rs []record
		e.must(http.StatusOK, &rs, "GET", path+"/records?timeout=100", "", "", "Accept", ctBinary)
		for _, r := range rs {
			httpRead[r.Value.(string)] = r.Partition
		}
		nativeMu.Lock()
		defer nativeMu.Unlock()
		return len(httpRead)+len(nativeRead) >= n
	})
	nativeMu.Lock()
	defer nativeMu.Unlock()
	for v, p := range nativeRead {
		if httpSide[p] {
			t.Errorf("native member read %s from partition %d, which the HTTP instance owns", v, p)
		}
		if !values[v] {
			t.Errorf("native member read unknown %q", v)
		}
	}
	for v64, p := range httpRead {
		if !httpSide[p] {
			t.Errorf("HTTP instance read %s from partition %d, which it does not own", v64, p)
		}
	}
	if len(httpRead)+len(nativeRead) != n {
		t.Errorf("read %d by HTTP and %d natively, want %d in all", len(httpRead), len(nativeRead), n)
	}
}

// TestV2InstanceExpiry: an instance unused for consumer.instance.timeout.ms
// is closed: it leaves its group and its calls answer 40403.
func TestV2InstanceExpiry(t *testing.T) {
	e := start(t, map[string]string{"consumer.instance.timeout.ms": "2000"})
	e.createTopic("exp", 1)
	path := e.newInstance("gexp", `{"auto.offset.reset":"earliest"}`)
	e.must(http.StatusNoContent, nil, "POST", path+"/subscription", ctV2, `{"topics":["exp"]}`)
	adm := kadm.NewClient(e.kafka())
	members := func() int {
		gs, err := adm.DescribeGroups(e.ctx, "gexp")
		if err != nil {
			t.Fatal(err)
		}
		return len(gs["gexp"].Members)
	}
	e.eventually("the instance joining its group", func() bool { return members() == 1 })
	e.eventually("the instance leaving its group when it expires", func() bool { return members() == 0 })
	wantError(t, "expired instance", e.do("GET", path+"/records", "", "", "Accept", ctBinary), 404, 40403)
}
