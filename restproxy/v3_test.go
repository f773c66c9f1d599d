package restproxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type v3List[T any] struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Self string  `json:"self"`
		Next *string `json:"next"`
	} `json:"metadata"`
	Data []T `json:"data"`
}

type v3Meta struct {
	Self         string `json:"self"`
	ResourceName string `json:"resource_name"`
}

// clusterID is the cluster id, read from GET /v3/clusters.
func (e *env) clusterID() string {
	e.t.Helper()
	var l v3List[struct {
		Kind      string `json:"kind"`
		Metadata  v3Meta `json:"metadata"`
		ClusterID string `json:"cluster_id"`
		Topics    struct {
			Related string `json:"related"`
		} `json:"topics"`
	}]
	r := e.must(http.StatusOK, &l, "GET", "/v3/clusters", "", "")
	if r.header.Get("Content-Type") != "application/json" || l.Kind != "KafkaClusterList" || len(l.Data) != 1 {
		e.t.Fatalf("/v3/clusters: %s", r)
	}
	c := l.Data[0]
	base := e.base + "/v3/clusters/" + c.ClusterID
	if c.Kind != "KafkaCluster" || c.ClusterID == "" || c.Metadata.Self != base || c.Metadata.ResourceName != "crn:///kafka="+c.ClusterID || c.Topics.Related != base+"/topics" {
		e.t.Fatalf("cluster: %+v", c)
	}
	return c.ClusterID
}

// TestV3Admin: the cluster, brokers and their configs, topics (create,
// list, get, configs, partitions, delete) and consumer groups with
// consumers and lag.
func TestV3Admin(t *testing.T) {
	e := start(t, nil)
	id := e.clusterID()
	c := "/v3/clusters/" + id
	wantError(t, "unknown cluster", e.do("GET", "/v3/clusters/nope/topics", "", ""), 404, 404)

	var brokers v3List[struct {
		Kind     string `json:"kind"`
		BrokerID int32  `json:"broker_id"`
		Host     string `json:"host"`
		Port     int32  `json:"port"`
	}]
	e.must(http.StatusOK, &brokers, "GET", c+"/brokers", "", "")
	if brokers.Kind != "KafkaBrokerList" || len(brokers.Data) != 1 || brokers.Data[0].Kind != "KafkaBroker" || brokers.Data[0].Port == 0 {
		t.Fatalf("brokers: %+v", brokers)
	}
	bid := fmt.Sprint(brokers.Data[0].BrokerID)
	e.must(http.StatusOK, nil, "GET", c+"/brokers/"+bid, "", "")
	wantError(t, "unknown broker", e.do("GET", c+"/brokers/77", "", ""), 404, 404)
	type config struct {
		Kind   string  `json:"kind"`
		Name   string  `json:"name"`
		Value  *string `json:"value"`
		Source string  `json:"source"`
	}
	var bcs v3List[config]
	e.must(http.StatusOK, &bcs, "GET", c+"/brokers/"+bid+"/configs", "", "")
	found := false
	for _, cf := range bcs.Data {
		found = found || cf.Name == "num.partitions" && cf.Kind == "KafkaBrokerConfig"
	}
	if !found {
		t.Errorf("broker configs lack num.partitions: %d configs", len(bcs.Data))
	}

	// A broker's config and the cluster-wide default.
	e.must(http.StatusNoContent, nil, "PUT", c+"/brokers/"+bid+"/configs/log.retention.ms", "application/json", `{"value":"7200000"}`)
	var bc config
	e.must(http.StatusOK, &bc, "GET", c+"/brokers/"+bid+"/configs/log.retention.ms", "", "")
	if bc.Kind != "KafkaBrokerConfig" || bc.Value == nil || *bc.Value != "7200000" || bc.Source != "DYNAMIC_BROKER_CONFIG" {
		t.Errorf("broker log.retention.ms after PUT: %+v", bc)
	}
	e.must(http.StatusNoContent, nil, "DELETE", c+"/brokers/"+bid+"/configs/log.retention.ms", "", "")
	e.must(http.StatusNoContent, nil, "POST", c+"/broker-configs:alter", "application/json", `{"data":[{"name":"log.retention.ms","value":"3600000"}]}`)
	var cc v3List[config]
	e.must(http.StatusOK, &cc, "GET", c+"/broker-configs", "", "")
	if cc.Kind != "KafkaClusterConfigList" || len(cc.Data) != 1 || cc.Data[0].Kind != "KafkaClusterConfig" || *cc.Data[0].Value != "3600000" {
		t.Errorf("cluster broker configs: %+v", cc)
	}
	e.must(http.StatusNoContent, nil, "DELETE", c+"/broker-configs/log.retention.ms", "", "")
	wantError(t, "a static broker config", e.do("PUT", c+"/brokers/"+bid+"/configs/log.dirs", "application/json", `{"value":"/x"}`), 400, 400)

	type topic struct {
		Kind              string `json:"kind"`
		Metadata          v3Meta `json:"metadata"`
		TopicName         string `json:"topic_name"`
		PartitionsCount   int    `json:"partitions_count"`
		ReplicationFactor int    `json:"replication_factor"`
		IsInternal        bool   `json:"is_internal"`
	}
	var created topic
	e.must(http.StatusCreated, &created, "POST", c+"/topics", "application/json",
		`{"topic_name":"v3t","partitions_count":3,"replication_factor":1,"configs":[{"name":"retention.ms","value":"86400000"}]}`)
	if created.Kind != "KafkaTopic" || created.TopicName != "v3t" || created.PartitionsCount != 3 || created.Metadata.ResourceName != "crn:///kafka="+id+"/topic=v3t" {
		t.Errorf("created: %+v", created)
	}
	wantError(t, "create twice", e.do("POST", c+"/topics", "application/json", `{"topic_name":"v3t","partitions_count":1}`), 400, 400)
	var topics v3List[topic]
	e.must(http.StatusOK, &topics, "GET", c+"/topics", "", "")
	if topics.Kind != "KafkaTopicList" || len(topics.Data) == 0 {
		t.Errorf("topics: %+v", topics)
	}
	var got topic
	e.must(http.StatusOK, &got, "GET", c+"/topics/v3t", "", "")
	if got.PartitionsCount != 3 || got.ReplicationFactor != 1 {
		t.Errorf("topic: %+v", got)
	}
	e.createTopic("grow", 1)
	e.must(http.StatusOK, &got, "PATCH", c+"/topics/grow", "application/json", `{"partitions_count":4}`)
	if got.PartitionsCount != 4 {
		t.Errorf("after PATCH partitions_count 4: %+v", got)
	}
	wantError(t, "fewer partitions", e.do("PATCH", c+"/topics/grow", "application/json", `{"partitions_count":2}`), 400, 400)
	var tcs v3List[config]
	e.must(http.StatusOK, &tcs, "GET", c+"/topics/v3t/configs", "", "")
	for _, cf := range tcs.Data {
		if cf.Name == "retention.ms" && (cf.Value == nil || *cf.Value != "86400000" || cf.Source != "DYNAMIC_TOPIC_CONFIG") {
			t.Errorf("retention.ms: %+v", cf)
		}
	}
	// One config: set, read, reset; many: configs:alter.
	e.must(http.StatusNoContent, nil, "PUT", c+"/topics/v3t/configs/segment.ms", "application/json", `{"value":"3600000"}`)
	var one config
	e.must(http.StatusOK, &one, "GET", c+"/topics/v3t/configs/segment.ms", "", "")
	if one.Kind != "KafkaTopicConfig" || one.Value == nil || *one.Value != "3600000" || one.Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("segment.ms after PUT: %+v", one)
	}
	e.must(http.StatusNoContent, nil, "POST", c+"/topics/v3t/configs:alter", "application/json",
		`{"data":[{"name":"segment.ms","operation":"DELETE"},{"name":"retention.bytes","value":"1048576"}]}`)
	e.must(http.StatusOK, &one, "GET", c+"/topics/v3t/configs/segment.ms", "", "")
	if one.Source == "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("segment.ms after DELETE: %+v", one)
	}
	e.must(http.StatusOK, &one, "GET", c+"/topics/v3t/configs/retention.bytes", "", "")
	if one.Value == nil || *one.Value != "1048576" {
		t.Errorf("retention.bytes after configs:alter: %+v", one)
	}
	e.must(http.StatusNoContent, nil, "DELETE", c+"/topics/v3t/configs/retention.bytes", "", "")
	wantError(t, "invalid config value", e.do("PUT", c+"/topics/v3t/configs/retention.ms", "application/json", `{"value":"soon"}`), 400, 400)
	wantError(t, "unknown config", e.do("GET", c+"/topics/v3t/configs/no.such", "", ""), 404, 404)

	var replicas v3List[struct {
		Kind     string `json:"kind"`
		BrokerID int32  `json:"broker_id"`
		IsLeader bool   `json:"is_leader"`
		IsInSync bool   `json:"is_in_sync"`
	}]
	e.must(http.StatusOK, &replicas, "GET", c+"/topics/v3t/partitions/0/replicas", "", "")
	if replicas.Kind != "KafkaReplicaList" || len(replicas.Data) != 1 || !replicas.Data[0].IsLeader || !replicas.Data[0].IsInSync {
		t.Errorf("replicas: %+v", replicas)
	}
	e.must(http.StatusOK, nil, "GET", c+"/topics/v3t/partitions/0/replicas/"+bid, "", "")

	var parts v3List[struct {
		Kind        string `json:"kind"`
		PartitionID int32  `json:"partition_id"`
		Leader      *struct {
			Related string `json:"related"`
		} `json:"leader"`
	}]
	e.must(http.StatusOK, &parts, "GET", c+"/topics/v3t/partitions", "", "")
	if len(parts.Data) != 3 || parts.Data[2].PartitionID != 2 || parts.Data[0].Leader == nil {
		t.Errorf("partitions: %+v", parts)
	}
	e.must(http.StatusOK, nil, "GET", c+"/topics/v3t/partitions/1", "", "")
	wantError(t, "unknown partition", e.do("GET", c+"/topics/v3t/partitions/5", "", ""), 404, 404)

	// A group with one native member that committed offset 1 of 3.
	e.produceBinary("v3t", 0, "a", "b", "c")
	var assigned atomic.Bool
	cl := e.kafka(kgo.ConsumerGroup("v3g"), kgo.ConsumeTopics("v3t"), kgo.ClientID("native-1"), kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned.Store(true) }))
	e.eventually("the member's assignment", func() bool {
		cl.PollRecords(nil, 1) //lint:ignore SA1012 nil: no wait
		return assigned.Load()
	})
	var commitErr error
	cl.CommitOffsetsSync(e.ctx, map[string]map[int32]kgo.EpochOffset{"v3t": {0: {Epoch: -1, Offset: 1}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
		})
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	type group struct {
		Kind            string `json:"kind"`
		ConsumerGroupID string `json:"consumer_group_id"`
		State           string `json:"state"`
		IsSimple        bool   `json:"is_simple"`
	}
	var g group
	e.eventually("the group stable", func() bool {
		e.must(http.StatusOK, &g, "GET", c+"/consumer-groups/v3g", "", "")
		return g.State == "STABLE"
	})
	if g.Kind != "KafkaConsumerGroup" || g.IsSimple {
		t.Errorf("group: %+v", g)
	}
	var groups v3List[group]
	e.must(http.StatusOK, &groups, "GET", c+"/consumer-groups", "", "")
	if groups.Kind != "KafkaConsumerGroupList" || len(groups.Data) != 1 || groups.Data[0].ConsumerGroupID != "v3g" {
		t.Errorf("groups: %+v", groups)
	}
	var consumers v3List[struct {
		ConsumerID string `json:"consumer_id"`
		ClientID   string `json:"client_id"`
	}]
	e.must(http.StatusOK, &consumers, "GET", c+"/consumer-groups/v3g/consumers", "", "")
	if len(consumers.Data) != 1 || consumers.Data[0].ClientID != "native-1" {
		t.Errorf("consumers: %+v", consumers)
	}
	var asg v3List[struct {
		Kind        string `json:"kind"`
		TopicName   string `json:"topic_name"`
		PartitionID int32  `json:"partition_id"`
	}]
	e.must(http.StatusOK, nil, "GET", c+"/consumer-groups/v3g/consumers/"+consumers.Data[0].ConsumerID, "", "")
	e.must(http.StatusOK, &asg, "GET", c+"/consumer-groups/v3g/consumers/"+consumers.Data[0].ConsumerID+"/assignments", "", "")
	if asg.Kind != "KafkaConsumerAssignmentList" || len(asg.Data) != 3 || asg.Data[0].Kind != "KafkaConsumerAssignment" || asg.Data[0].TopicName != "v3t" {
		t.Errorf("assignments: %+v", asg)
	}
	wantError(t, "unknown consumer", e.do("GET", c+"/consumer-groups/v3g/consumers/nope", "", ""), 404, 404)
	var lag struct {
		Kind              string `json:"kind"`
		MaxLag            int64  `json:"max_lag"`
		TotalLag          int64  `json:"total_lag"`
		MaxLagTopicName   string `json:"max_lag_topic_name"`
		MaxLagPartitionID int32  `json:"max_lag_partition_id"`
		MaxLagClientID    string `json:"max_lag_client_id"`
	}
	e.must(http.StatusOK, &lag, "GET", c+"/consumer-groups/v3g/lag-summary", "", "")
	if lag.Kind != "KafkaConsumerGroupLagSummary" || lag.MaxLag != 2 || lag.TotalLag != 2 || lag.MaxLagTopicName != "v3t" || lag.MaxLagPartitionID != 0 || lag.MaxLagClientID != "native-1" {
		t.Errorf("lag summary: %+v", lag)
	}
	var lags v3List[struct {
		Kind          string `json:"kind"`
		PartitionID   int32  `json:"partition_id"`
		CurrentOffset int64  `json:"current_offset"`
		LogEndOffset  int64  `json:"log_end_offset"`
		Lag           int64  `json:"lag"`
		ClientID      string `json:"client_id"`
	}]
	e.must(http.StatusOK, &lags, "GET", c+"/consumer-groups/v3g/lags", "", "")
	if lags.Kind != "KafkaConsumerLagList" || len(lags.Data) != 3 {
		t.Fatalf("lags: %+v", lags)
	}
	if l := lags.Data[0]; l.Kind != "KafkaConsumerLag" || l.PartitionID != 0 || l.CurrentOffset != 1 || l.LogEndOffset != 3 || l.Lag != 2 || l.ClientID != "native-1" {
		t.Errorf("lag of partition 0: %+v", l)
	}
	e.must(http.StatusOK, nil, "GET", c+"/consumer-groups/v3g/lags/v3t/partitions/0", "", "")
	wantError(t, "unknown group", e.do("GET", c+"/consumer-groups/nope", "", ""), 404, 404)
	cl.Close()

	e.must(http.StatusNoContent, nil, "DELETE", c+"/topics/v3t", "", "")
	e.eventually("the deleted topic gone", func() bool { return e.do("GET", c+"/topics/v3t", "", "").status == 404 })
}

type v3Reply struct {
	ErrorCode   int    `json:"error_code"`
	Message     string `json:"message"`
	TopicName   string `json:"topic_name"`
	PartitionID *int32 `json:"partition_id"`
	Offset      *int64 `json:"offset"`
	Timestamp   string `json:"timestamp"`
	Key         *struct {
		Type string `json:"type"`
		Size int    `json:"size"`
	} `json:"key"`
}

// TestV3Records: one record, then a stream in which each record's reply
// arrives before the next record is sent, with a bad record answered in
// place; a native consumer reads what was produced.
func TestV3Records(t *testing.T) {
	e := start(t, map[string]string{"rest.proxy.max.request.bytes": "4096"})
	e.createTopic("rec", 2)
	c := "/v3/clusters/" + e.clusterID()

	var one v3Reply
	e.must(http.StatusOK, &one, "POST", c+"/topics/rec/records", "application/json",
		`{"partition_id":1,"headers":[{"name":"h","value":"`+b64("hv")+`"}],"key":{"type":"STRING","data":"k"},"value":{"type":"JSON","data":{"a":1}}}`)
	if one.ErrorCode != 200 || one.TopicName != "rec" || *one.PartitionID != 1 || *one.Offset != 0 || one.Key.Type != "STRING" || one.Key.Size != 1 || one.Timestamp == "" {
		t.Errorf("one record: %+v", one)
	}
	wantError(t, "unknown topic", e.do("POST", c+"/topics/nope/records", "application/json", `{"value":{"data":1}}`), 404, 404)
	wantError(t, "wrong content type", e.do("POST", c+"/topics/rec/records", "text/plain", `{"value":{"data":1}}`), 415, 415)
	var big v3Reply
	e.must(http.StatusOK, &big, "POST", c+"/topics/rec/records", "application/json", `{"value":{"type":"STRING","data":"`+strings.Repeat("x", 5000)+`"}}`)
	if big.ErrorCode != 413 {
		t.Errorf("record over rest.proxy.max.request.bytes: %+v", big)
	}

	// The stream: write a record, read its reply, then the next.
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(e.ctx, "POST", e.base+c+"/topics/rec/records", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	type result struct {
		resp *http.Response
		err  error
	}
	// A connection of its own: a body that cannot be replayed is never
	// retried on a pooled connection the server closed meanwhile.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	defer pw.Close() // ends the transport's body copy if the test fails early
	done := make(chan result, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Do(req)
		done <- result{resp, err}
	}()
	send := func(s string) {
		if _, err := io.WriteString(pw, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"partition_id":0,"value":{"type":"BINARY","data":"` + b64("s0") + `"}}`)
	var res result
	select {
	case res = <-done:
	case <-e.ctx.Done():
		pw.CloseWithError(e.ctx.Err())
		t.Fatal("no reply to the stream's first record")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	defer res.resp.Body.Close()
	if res.resp.StatusCode != 200 {
		t.Fatalf("stream: %d", res.resp.StatusCode)
	}
	replies := json.NewDecoder(bufio.NewReader(res.resp.Body))
	next := func() v3Reply {
		var r v3Reply
		if err := replies.Decode(&r); err != nil {
			t.Fatalf("reading a stream reply: %v", err)
		}
		return r
	}
	if r := next(); r.ErrorCode != 200 || *r.Offset != 0 || *r.PartitionID != 0 {
		t.Errorf("stream record 0: %+v", r)
	}
	for i := 1; i < 5; i++ {
		send(fmt.Sprintf(`{"partition_id":0,"value":{"type":"BINARY","data":"%s"}}`, b64(fmt.Sprintf("s%d", i))))
		if r := next(); r.ErrorCode != 200 || *r.Offset != int64(i) {
			t.Errorf("stream record %d: %+v", i, r)
		}
	}
	send(`{"partition_id":0,"value":{"type":"BINARY","data":"%%%"}}`)
	if r := next(); r.ErrorCode != 400 || !strings.Contains(r.Message, "base64") {
		t.Errorf("bad record in the stream: %+v", r)
	}
	send(`{"partition_id":9,"value":{"data":1}}`)
	if r := next(); r.ErrorCode != 404 {
		t.Errorf("record to a missing partition: %+v", r)
	}
	send(`{"partition_id":0,"value":{"type":"STRING","data":"last"}}`)
	if r := next(); r.ErrorCode != 200 || *r.Offset != 5 {
		t.Errorf("record after the bad ones: %+v", r)
	}
	pw.Close()
	if err := replies.Decode(new(v3Reply)); err != io.EOF {
		t.Errorf("after the stream: %v, want EOF", err)
	}

	cl := e.kafka(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rec": {0: kgo.NewOffset().AtStart()}}))
	var vals []string
	for len(vals) < 6 {
		fs := cl.PollFetches(e.ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	}
	if strings.Join(vals, ",") != "s0,s1,s2,s3,s4,last" {
		t.Errorf("native read %q", vals)
	}
}

// TestV3Reassignments: the reassignment routes list ongoing
// reassignments (none on one broker, where every reassignment ends at
// once) with Confluent's shapes; a partition not being reassigned is 404.
func TestV3Reassignments(t *testing.T) {
	e := start(t, nil)
	e.createTopic("ra", 2)
	c := "/v3/clusters/" + e.clusterID()
	var list struct {
		Kind string
		Data []json.RawMessage
	}
	e.must(200, &list, "GET", c+"/topics/-/partitions/-/reassignment", "", "")
	if list.Kind != "KafkaReassignmentList" || len(list.Data) != 0 {
		t.Errorf("all reassignments: %+v", list)
	}
	e.must(200, &list, "GET", c+"/topics/ra/partitions/-/reassignment", "", "")
	if list.Kind != "KafkaReassignmentList" || len(list.Data) != 0 {
		t.Errorf("the topic's reassignments: %+v", list)
	}
	wantError(t, "a partition not being reassigned", e.do("GET", c+"/topics/ra/partitions/1/reassignment", "", ""), 404, 404)
	wantError(t, "an unknown partition", e.do("GET", c+"/topics/ra/partitions/9/reassignment", "", ""), 404, 404)
	wantError(t, "an unknown topic", e.do("GET", c+"/topics/nope/partitions/-/reassignment", "", ""), 404, 404)
}

// TestV3RecordsBatch: records:batch produces every entry and answers 207
// with successes and failures by entry id, in entry order; a batch that
// is empty, too long, or has bad or repeated ids is refused whole.
func TestV3RecordsBatch(t *testing.T) {
	e := start(t, nil)
	e.createTopic("rb", 2)
	path := "/v3/clusters/" + e.clusterID() + "/topics/rb/records:batch"
	var resp struct {
		Successes []struct {
			ID          string
			PartitionID int32 `json:"partition_id"`
			Offset      int64
			Value       *struct{ Type string }
		}
		Failures []struct {
			ID        string
			ErrorCode int `json:"error_code"`
			Message   string
		}
	}
	e.must(207, &resp, "POST", path, "application/json", jsonBody(t, map[string]any{"entries": []any{
		map[string]any{"id": "a", "partition_id": 0, "value": map[string]any{"type": "STRING", "data": "one"}},
		map[string]any{"id": "b", "partition_id": 9, "value": map[string]any{"data": 1}},
		map[string]any{"id": "c", "partition_id": 0, "value": map[string]any{"type": "JSON", "data": map[string]any{"n": 2}}},
		map[string]any{"id": "d", "value": map[string]any{"type": "BINARY", "data": "%%"}},
	}}))
	if len(resp.Successes) != 2 || resp.Successes[0].ID != "a" || resp.Successes[1].ID != "c" ||
		resp.Successes[0].Offset != 0 || resp.Successes[1].Offset != 1 || resp.Successes[1].Value == nil || resp.Successes[1].Value.Type != "JSON" {
		t.Errorf("successes %+v", resp.Successes)
	}
	if len(resp.Failures) != 2 || resp.Failures[0].ID != "b" || resp.Failures[0].ErrorCode != 404 || resp.Failures[1].ID != "d" || resp.Failures[1].ErrorCode != 400 {
		t.Errorf("failures %+v", resp.Failures)
	}
	cl := e.kafka(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rb": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(e.ctx)
		if e.ctx.Err() != nil {
			t.Fatalf("read %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "one" || got[1] != `{"n":2}` {
		t.Errorf("partition 0 holds %q", got)
	}
	many := make([]any, 11)
	for i := range many {
		many[i] = map[string]any{"id": fmt.Sprint(i), "value": map[string]any{"data": i}}
	}
	for what, c := range map[string]struct {
		body         any
		status, code int
	}{
		"empty":        {map[string]any{"entries": []any{}}, 400, 400},
		"eleven":       {map[string]any{"entries": many}, 400, 400},
		"repeated ids": {map[string]any{"entries": []any{map[string]any{"id": "x"}, map[string]any{"id": "x"}}}, 400, 400},
		"a numeric id": {map[string]any{"entries": []any{map[string]any{"id": 1}}}, 422, 422},
		"an id with /": {map[string]any{"entries": []any{map[string]any{"id": "a/b"}}}, 422, 422},
	} {
		wantError(t, what, e.do("POST", path, "application/json", jsonBody(t, c.body)), c.status, c.code)
	}
}
