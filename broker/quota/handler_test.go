package quota

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeAPI answers every request with its empty response (nil for acks=0)
// and counts calls; fetches get one partition of `records` bytes.
type fakeAPI struct {
	calls   int
	records int
}

func (f *fakeAPI) Handle(_ *network.RequestContext, req protocol.Request) kmsg.Response {
	f.calls++
	if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil
	}
	resp := req.Body.ResponseKind()
	if fr, ok := resp.(*kmsg.FetchResponse); ok {
		t := kmsg.NewFetchResponseTopic()
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = make([]byte, f.records)
		t.Partitions = append(t.Partitions, p)
		fr.Topics = append(fr.Topics, t)
		fr.SessionID = 7
	}
	if cr, ok := resp.(*kmsg.CreateTopicsResponse); ok {
		for _, t := range req.Body.(*kmsg.CreateTopicsRequest).Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions = t.Topic, t.NumPartitions
			cr.Topics = append(cr.Topics, rt)
		}
	}
	return resp
}

type handlerEnv struct {
	m    *Manager
	api  *fakeAPI
	h    network.Handler
	now  time.Time
	user string
}

func newHandlerEnv() *handlerEnv {
	e := &handlerEnv{m: NewManager(DefaultConfig), api: &fakeAPI{}, now: time.Unix(1000, 0), user: "User:alice"}
	e.h = e.m.Handler(e.api, HandlerConfig{Now: func() time.Time { return e.now }, Partitions: func(string) int32 { return 4 }})
	return e
}

func (e *handlerEnv) do(body kmsg.Request, version int16, size int32) (*network.RequestContext, kmsg.Response) {
	body.SetVersion(version)
	rc := &network.RequestContext{Principal: e.user, Size: size,
		Header: protocol.RequestHeader{APIKey: body.Key(), APIVersion: version, ClientID: "app"}}
	return rc, e.h.Handle(rc, protocol.Request{Header: rc.Header, Body: body})
}

func TestHandlerProduce(t *testing.T) {
	e := newHandlerEnv()
	e.m.Alter(Entity{User: Named("alice")}, ProducerByteRate, 1000, false)
	p := kmsg.NewPtrProduceRequest()
	p.Acks = 1
	rc, resp := e.do(p, 9, 5000) // within the 10 s minimum window
	if rc.ThrottleMs != 0 || resp.(*kmsg.ProduceResponse).ThrottleMillis != 0 {
		t.Fatalf("throttled within the quota: %d", rc.ThrottleMs)
	}
	rc, resp = e.do(p, 9, 15000) // 20000 B: twice the quota over 10 s
	if rc.ThrottleMs != 10000 || resp.(*kmsg.ProduceResponse).ThrottleMillis != 10000 {
		t.Fatalf("throttle %d / %d, want 10000", rc.ThrottleMs, resp.(*kmsg.ProduceResponse).ThrottleMillis)
	}
	// acks=0 has no response: the connection is muted all the same.
	p0 := kmsg.NewPtrProduceRequest()
	p0.Acks = 0
	if rc, resp := e.do(p0, 9, 1000); resp != nil || rc.ThrottleMs == 0 {
		t.Fatalf("acks=0: %v %d", resp, rc.ThrottleMs)
	}
	// Another user is not limited; inter-broker requests are exempt.
	e.user = "User:bob"
	if rc, _ := e.do(p, 9, 1<<30); rc.ThrottleMs != 0 {
		t.Fatalf("bob throttled %d", rc.ThrottleMs)
	}
	if rc, _ := e.do(kmsg.NewPtrLeaderAndISRRequest(), 7, 1<<30); rc.ThrottleMs != 0 {
		t.Fatal("an inter-broker request was throttled")
	}
}

func TestHandlerFetch(t *testing.T) {
	e := newHandlerEnv()
	e.m.Alter(Entity{Client: Named("app")}, ConsumerByteRate, 1000, false)
	e.api.records = 5000
	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID, f.MaxBytes, f.MinBytes, f.SessionEpoch = -1, 50<<20, 1, -1
	rc, resp := e.do(f, 11, 100)
	if f.MaxBytes != 10000 || rc.ThrottleMs != 0 || len(resp.(*kmsg.FetchResponse).Topics) != 1 {
		t.Fatalf("first fetch: max bytes %d (want the quota's 10 s window, 10000), throttle %d", f.MaxBytes, rc.ThrottleMs)
	}
	e.api.records = 20000
	rc, resp = e.do(f, 11, 100)
	fr := resp.(*kmsg.FetchResponse)
	if rc.ThrottleMs == 0 || fr.ThrottleMillis != rc.ThrottleMs || len(fr.Topics) != 0 || fr.SessionID != 0 {
		t.Fatalf("throttled fetch: throttle %d, %d topics, session %d: want an empty response", rc.ThrottleMs, len(fr.Topics), fr.SessionID)
	}
	// The throttled response's bytes were taken back: a small fetch later
	// goes through.
	e.now = e.now.Add(time.Duration(rc.ThrottleMs) * time.Millisecond)
	e.api.records = 10
	if rc, _ := e.do(f, 11, 100); rc.ThrottleMs != 0 {
		t.Fatalf("fetch after the throttle: %d", rc.ThrottleMs)
	}
	// A follower's fetch is not a consumer's.
	ff := kmsg.NewPtrFetchRequest()
	ff.ReplicaID, ff.MaxBytes = 2, 50<<20
	e.api.records = 1 << 20
	if rc, _ := e.do(ff, 11, 100); rc.ThrottleMs != 0 || ff.MaxBytes != 50<<20 {
		t.Fatal("follower fetch limited")
	}
}

func TestHandlerControllerMutations(t *testing.T) {
	e := newHandlerEnv()
	e.m.Alter(Entity{User: DefaultPart}, ControllerMutationRate, 1, false)
	ct := func(names ...string) *kmsg.CreateTopicsRequest {
		r := kmsg.NewPtrCreateTopicsRequest()
		for _, n := range names {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = n, 20, 1
			r.Topics = append(r.Topics, t)
		}
		return r
	}
	// Permissive (v5): the mutation happens and is throttled after.
	rc, _ := e.do(ct("a"), 5, 100)
	if e.api.calls != 1 || rc.ThrottleMs == 0 {
		t.Fatalf("v5: calls %d throttle %d", e.api.calls, rc.ThrottleMs)
	}
	// Strict (v6): refused while over the quota, not handled.
	rc, resp := e.do(ct("b", "c"), 6, 100)
	cr := resp.(*kmsg.CreateTopicsResponse)
	if e.api.calls != 1 || rc.ThrottleMs == 0 || len(cr.Topics) != 2 || cr.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("v6 over the quota: calls %d throttle %d %+v", e.api.calls, rc.ThrottleMs, cr.Topics)
	}
	// DeleteTopics counts the partitions it deletes (4 each here).
	e2 := newHandlerEnv()
	e2.m.Alter(Entity{User: DefaultPart}, ControllerMutationRate, 0.1, false)
	d := kmsg.NewPtrDeleteTopicsRequest()
	d.TopicNames = []string{"x", "y"}
	if rc, _ := e2.do(d, 4, 100); rc.ThrottleMs == 0 {
		t.Fatal("deleting 8 partitions at 0.1/s was not throttled")
	}
}

func TestHandlerWithoutQuotas(t *testing.T) {
	e := newHandlerEnv()
	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID, f.MaxBytes = -1, 50<<20
	e.api.records = 1 << 20
	if rc, _ := e.do(f, 11, 100); rc.ThrottleMs != 0 || f.MaxBytes != 50<<20 || e.m.Active() {
		t.Fatal("a broker without quotas touched a fetch")
	}
	e.m.Alter(Entity{User: Named("x")}, ProducerByteRate, 1, false)
	e.m.Alter(Entity{User: Named("x")}, ProducerByteRate, 0, true)
	if e.m.Active() {
		t.Fatal("active after the last quota was removed")
	}
}
