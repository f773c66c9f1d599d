package quota

import (
	"math"
	"strings"
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HandlerConfig is what the quota handler needs besides the manager.
type HandlerConfig struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Partitions returns a topic's partition count (0 when unknown), for
	// the partitions a DeleteTopics or CreatePartitions mutates.
	Partitions func(topic string) int32
}

// Handler wraps next (the API layer) with client quotas, as Kafka's
// KafkaApis applies its quota managers:
//
//   - Produce: the request's bytes count against producer_byte_rate.
//   - Fetch from a consumer: fetch.max.bytes is capped at what the quota
//     allows in its window; the response's bytes count against
//     consumer_byte_rate; a throttled fetch is answered empty (its bytes
//     taken back), as Kafka does.
//   - Every request but those below: the handler's time, in percent of one
//     thread, counts against request_percentage. Requests that park
//     (Fetch, ShareFetch, JoinGroup, SyncGroup, acks=all Produce) are not
//     counted: their wall time is mostly waiting, and Go gives no per
//     goroutine CPU time. Produce with acks=0 is exempt, as in Kafka.
//   - CreateTopics, CreatePartitions, DeleteTopics: the partitions they
//     create or delete count against controller_mutation_rate; from
//     CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 (strict
//     mode) a request made while the quota is exceeded is refused with
//     THROTTLING_QUOTA_EXCEEDED for every topic.
//
// Inter-broker requests and follower fetches are exempt. The throttle time
// (the largest of the quotas the request went over) is put in the
// response's throttle_time_ms and in RequestContext.ThrottleMs, which
// makes the network mute the connection after the response (KIP-219).
// Users are principals' names (User:alice is alice), as Kafka's.
func (m *Manager) Handler(next network.Handler, cfg HandlerConfig) network.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &handler{m: m, next: next, cfg: cfg}
}

type handler struct {
	m    *Manager
	next network.Handler
	cfg  HandlerConfig
}

// exempt are the inter-broker APIs (Kafka's ClusterAction requests).
var exempt = map[int16]bool{
	int16(kmsg.LeaderAndISR): true, int16(kmsg.StopReplica): true, int16(kmsg.UpdateMetadata): true,
	int16(kmsg.ControlledShutdown): true, int16(kmsg.WriteTxnMarkers): true,
}

// parks are the requests whose handling time is mostly waiting.
var parks = map[int16]bool{
	int16(kmsg.Fetch): true, int16(kmsg.ShareFetch): true, int16(kmsg.JoinGroup): true, int16(kmsg.SyncGroup): true,
}

// nanosToPercent turns handler nanoseconds into percent-seconds
// (ClientQuotaManager.NanosToPercentagePerSecond).
const nanosToPercent = 100.0 / 1e9

// userOf is the quota user of a principal: its name.
func userOf(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// Handle implements network.Handler.
func (h *handler) Handle(rc *network.RequestContext, req protocol.Request) kmsg.Response {
	key := req.Header.APIKey
	if exempt[key] || req.Body == nil || !h.m.Active() {
		return h.next.Handle(rc, req)
	}
	user, client := userOf(rc.Principal), req.Header.ClientID
	m := h.m
	consumerFetch := false
	if fr, ok := req.Body.(*kmsg.FetchRequest); ok {
		consumerFetch = fetchReplicaID(fr) < 0
		if consumerFetch {
			if maxw, ok := m.MaxValueInWindow(Fetch, user, client); ok {
				limit := int32(min(maxw, math.MaxInt32))
				fr.MaxBytes = max(min(fr.MaxBytes, limit), 1)
				fr.MinBytes = min(fr.MinBytes, fr.MaxBytes)
			}
		}
	}
	if resp := h.strictMutation(rc, req, user, client); resp != nil {
		return resp
	}
	mutated, before := h.mutationsBefore(req.Body)

	start := time.Now()
	resp := h.next.Handle(rc, req)
	took := time.Since(start)
	now := h.cfg.Now().UnixMilli()

	var throttle int64
	recordRequest := !parks[key]
	switch r := req.Body.(type) {
	case *kmsg.ProduceRequest:
		throttle = m.Record(Produce, user, client, float64(rc.Size), now)
		recordRequest = r.Acks == 1
	case *kmsg.FetchRequest:
		if consumerFetch {
			// A Fetch answer holds its records as file ranges
			// (protocol.Spliced): count the ranges' lengths.
			spl, _ := resp.(*protocol.Spliced)
			inner := resp
			if spl != nil {
				inner = spl.Response
			}
			if fr, ok := inner.(*kmsg.FetchResponse); ok {
				size := fetchSize(fr, spl)
				throttle = m.Record(Fetch, user, client, float64(size), now)
				if throttle > 0 {
					m.Unrecord(Fetch, user, client, float64(size), now)
					emptyFetch(r, fr)
				}
			}
		}
	case *kmsg.CreateTopicsRequest, *kmsg.CreatePartitionsRequest, *kmsg.DeleteTopicsRequest:
		if n := mutated + h.mutationsAfter(req.Body, resp, before); n > 0 {
			throttle = m.Record(ControllerMutation, user, client, float64(n), now)
		}
	}
	if recordRequest {
		throttle = max(throttle, m.Record(Request, user, client, float64(took.Nanoseconds())*nanosToPercent, now))
	}
	if throttle > 0 {
		setThrottle(rc, resp, throttle)
	}
	return resp
}

// setThrottle puts ms in the response and the request context.
func setThrottle(rc *network.RequestContext, resp kmsg.Response, ms int64) {
	t := int32(min(ms, math.MaxInt32))
	rc.ThrottleMs = max(rc.ThrottleMs, t)
	tr, ok := resp.(kmsg.ThrottleResponse)
	st, ok2 := resp.(kmsg.SetThrottleResponse)
	if ok && ok2 {
		if cur, _ := tr.Throttle(); cur < t {
			st.SetThrottle(t)
		}
	}
}

func fetchReplicaID(r *kmsg.FetchRequest) int32 {
	if r.Version >= 15 {
		return r.ReplicaState.ID
	}
	return r.ReplicaID
}

// fetchSize is the bytes of a fetch response: its record batches and a
// close estimate of the fields around them.
func fetchSize(r *kmsg.FetchResponse, spl *protocol.Spliced) int {
	n := 16
	for _, t := range r.Topics {
		n += len(t.Topic) + 20
		for _, p := range t.Partitions {
			n += 50 + int(spl.FieldLen(p.RecordBatches))
		}
	}
	return n
}

// emptyFetch makes a throttled fetch's response empty, as Kafka's
// FetchContext.getThrottledResponse: no partitions; a fetch that opened a
// session (or used none) gets no session id, an incremental one keeps its
// session.
func emptyFetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	resp.Topics = nil
	resp.ErrorCode = 0
	if req.SessionEpoch <= 0 {
		resp.SessionID = 0
	}
}

// mutationsBefore counts, before the request runs, the partitions a
// DeleteTopics will delete (afterwards they are gone), and notes the
// partition counts of a CreatePartitions' topics.
func (h *handler) mutationsBefore(body kmsg.Request) (int, map[string]int32) {
	if h.cfg.Partitions == nil || !h.m.Enabled(ControllerMutation) {
		return 0, nil
	}
	n := 0
	switch r := body.(type) {
	case *kmsg.DeleteTopicsRequest:
		for _, name := range r.TopicNames {
			n += int(h.cfg.Partitions(name))
		}
		for _, t := range r.Topics {
			if t.Topic != nil {
				n += int(h.cfg.Partitions(*t.Topic))
			}
		}
	case *kmsg.CreatePartitionsRequest:
		before := map[string]int32{}
		for _, t := range r.Topics {
			before[t.Topic] = h.cfg.Partitions(t.Topic)
		}
		return 0, before
	}
	return n, nil
}

// mutationsAfter counts the partitions a CreateTopics or CreatePartitions
// created (a DeleteTopics counted them before).
func (h *handler) mutationsAfter(body kmsg.Request, resp kmsg.Response, before map[string]int32) int {
	if !h.m.Enabled(ControllerMutation) {
		return 0
	}
	n := 0
	switch r := body.(type) {
	case *kmsg.CreateTopicsRequest:
		cr, _ := resp.(*kmsg.CreateTopicsResponse)
		if cr == nil || r.ValidateOnly {
			return 0
		}
		for i, t := range cr.Topics {
			if t.ErrorCode != 0 {
				continue
			}
			switch {
			case t.NumPartitions > 0:
				n += int(t.NumPartitions)
			case i < len(r.Topics) && r.Topics[i].NumPartitions > 0:
				n += int(r.Topics[i].NumPartitions)
			case i < len(r.Topics):
				n += len(r.Topics[i].ReplicaAssignment)
			}
		}
	case *kmsg.CreatePartitionsRequest:
		cr, _ := resp.(*kmsg.CreatePartitionsResponse)
		if cr == nil || r.ValidateOnly {
			return 0
		}
		ok := map[string]bool{}
		for _, t := range cr.Topics {
			ok[t.Topic] = t.ErrorCode == 0
		}
		for _, t := range r.Topics {
			if ok[t.Topic] && t.Count > before[t.Topic] {
				n += int(t.Count - before[t.Topic])
			}
		}
	}
	return n
}

// strictMutation refuses a topic mutation of a strict version while the
// client's controller mutation quota is exceeded (Kafka's
// StrictControllerMutationQuota): every topic gets
// THROTTLING_QUOTA_EXCEEDED, and the response the throttle time.
func (h *handler) strictMutation(rc *network.RequestContext, req protocol.Request, user, client string) kmsg.Response {
	v := req.Header.APIVersion
	var resp kmsg.Response
	code := kerr.ThrottlingQuotaExceeded.Code
	msg := kerr.ThrottlingQuotaExceeded.Description
	switch r := req.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		if v < 6 {
			return nil
		}
		cr := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, &msg
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			cr.Topics = append(cr.Topics, rt)
		}
		resp = cr
	case *kmsg.CreatePartitionsRequest:
		if v < 3 {
			return nil
		}
		cr := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, &msg
			cr.Topics = append(cr.Topics, rt)
		}
		resp = cr
	case *kmsg.DeleteTopicsRequest:
		if v < 5 {
			return nil
		}
		dr := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, name := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			n := name
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = &n, code, &msg
			dr.Topics = append(dr.Topics, rt)
		}
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = t.Topic, t.TopicID, code, &msg
			dr.Topics = append(dr.Topics, rt)
		}
		resp = dr
	default:
		return nil
	}
	th := h.m.Pending(ControllerMutation, user, client, h.cfg.Now().UnixMilli())
	if th <= 0 {
		return nil
	}
	setThrottle(rc, resp, th)
	return resp
}
