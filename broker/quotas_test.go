package broker

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/quota"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaEntity(parts ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i+1 < len(parts); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: parts[i]}
		if parts[i+1] != "<default>" {
			n := parts[i+1]
			c.Name = &n
		}
		e = append(e, c)
	}
	return e
}

// TestClientQuotasAdmin sets, validates, describes and removes client
// quotas through kadm, and checks they survive a restart.
func TestClientQuotasAdmin(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	ctx := testCtx(t)
	adm, _ := newAdmin(t, b)

	set := func(e kadm.ClientQuotaEntity, ops ...kadm.AlterClientQuotaOp) kadm.AlteredClientQuota {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
		if err != nil || len(res) != 1 {
			t.Fatalf("alter: %v %v", res, err)
		}
		return res[0]
	}
	for _, c := range []struct {
		e   kadm.ClientQuotaEntity
		op  kadm.AlterClientQuotaOp
		msg string
	}{
		{quotaEntity("user", "alice"), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 10.5}, "producer_byte_rate cannot be a fractional value."},
		{quotaEntity("user", "alice"), kadm.AlterClientQuotaOp{Key: "bogus", Value: 1}, "Invalid configuration key bogus"},
		{quotaEntity("user", "alice"), kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: 0}, "Quota consumer_byte_rate must be greater than 0"},
		{quotaEntity("topic", "x"), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1}, "Unhandled client quota entity type: topic"},
		{nil, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1}, "Invalid empty client quota entity"},
	} {
		if r := set(c.e, c.op); !errors.Is(r.Err, kerr.InvalidRequest) || r.ErrMessage != c.msg {
			t.Errorf("%v %+v: %v %q, want INVALID_REQUEST %q", c.e, c.op, r.Err, r.ErrMessage, c.msg)
		}
	}
	for _, e := range []kadm.ClientQuotaEntity{
		quotaEntity("user", "alice"),
		quotaEntity("user", "<default>"),
		quotaEntity("user", "alice", "client-id", "app"),
		quotaEntity("client-id", "<default>"),
	} {
		if r := set(e, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1024},
			kadm.AlterClientQuotaOp{Key: "request_percentage", Value: 12.5}); r.Err != nil {
			t.Fatalf("set %v: %v %s", e, r.Err, r.ErrMessage)
		}
	}
	if r := set(quotaEntity("user", "<default>"), kadm.AlterClientQuotaOp{Key: "request_percentage", Remove: true}); r.Err != nil {
		t.Fatal(r.Err)
	}
	describe := func(b *Broker) map[string]map[string]float64 {
		t.Helper()
		adm, _ := newAdmin(t, b)
		qs, err := adm.DescribeClientQuotas(ctx, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]float64{}
		for _, q := range qs {
			vals := map[string]float64{}
			for _, v := range q.Values {
				vals[v.Key] = v.Value
			}
			out[strings.Trim(q.Entity.String(), "{}")] = vals
		}
		return out
	}
	got := describe(b)
	if len(got) != 4 || got["user=alice"]["request_percentage"] != 12.5 || got["user=<default>"]["producer_byte_rate"] != 1024 ||
		len(got["user=<default>"]) != 1 || got["user=alice, client-id=app"]["producer_byte_rate"] != 1024 {
		t.Fatalf("described %v", got)
	}
	// Filters: users only, strict.
	name := "alice"
	qs, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: &name, MatchType: kadm.QuotasMatchType(quota.MatchExact)}})
	if err != nil || len(qs) != 1 || qs[0].Entity.String() != "{user=alice}" {
		t.Fatalf("strict describe of alice: %v %v", qs, err)
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 9}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("bad match type: %v", err)
	}
	// No match is an empty list, not null: the Java client reads it unchecked.
	none := kmsg.NewPtrDescribeClientQuotasRequest()
	nc := kmsg.NewDescribeClientQuotasRequestComponent()
	nc.EntityType, nc.MatchType, nc.Match = "user", 0, kmsg.StringPtr("nobody")
	none.Components, none.Strict = append(none.Components, nc), true
	noneResp := kmsg.NewPtrDescribeClientQuotasResponse()
	if err := rawConn(t, b).roundTrip(none, noneResp); err != nil || noneResp.Entries == nil || len(noneResp.Entries) != 0 {
		t.Fatalf("describe of nobody: %+v %v", noneResp, err)
	}
	// Validate-only changes nothing.
	if res, err := adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("user", "bob"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 5}}}}); err != nil || res[0].Err != nil {
		t.Fatalf("validate: %v %v", res, err)
	}
	if _, ok := describe(b)["user=bob"]; ok {
		t.Fatal("validate-only stored a quota")
	}
	b.Close()
	b2 := startTestBroker(t, dir, nil)
	if got2 := describe(b2); len(got2) != 4 || got2["user=alice"]["producer_byte_rate"] != 1024 {
		t.Fatalf("after restart: %v", got2)
	}
	if bound, _, ok := b2.quotas.Resolve(quota.Produce, "alice", "other"); !ok || bound != 1024 {
		t.Fatalf("enforced after restart: %v %v", bound, ok)
	}
}

type throttleHook struct {
	n     atomic.Int64
	after atomic.Int64
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, after bool) {
	if d > 0 {
		h.n.Add(1)
		if after {
			h.after.Add(1)
		}
	}
}

// TestProduceQuota caps one producer at 1 MB/s with AlterClientQuotas: it
// gets about 1 MB/s and is told to back off (throttle_time_ms), while a
// producer with another client id on the same broker runs unthrottled.
func TestProduceQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("runs producers for seconds")
	}
	// Three windows of 1 s: the first burst a rate allows is 2 s of quota,
	// so a run of a few seconds measures the steady rate.
	b := startTestBroker(t, t.TempDir(), map[string]string{"quota.window.num": "3"})
	ctx := testCtx(t)
	adm, _ := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "q", 1, nil)
	const quotaRate = 1 << 20
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("client-id", "capped"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaRate}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", res, err)
	}

	type result struct {
		bytes    int64
		elapsed  time.Duration
		throttle *throttleHook
	}
	run := func(clientID string, warmup bool, d time.Duration) result {
		h := &throttleHook{}
		cl := newClient(t, b, kgo.ClientID(clientID), kgo.WithHooks(h), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedBytes(4<<20), kgo.ProducerLinger(0))
		value := make([]byte, 10<<10)
		var acked atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		measured := !warmup
		var base int64
		for {
			if !measured && h.n.Load() > 0 {
				// Measure from the first throttle: the rate's first
				// burst is behind.
				measured, start, base = true, time.Now(), acked.Load()
			}
			if measured && time.Since(start) >= d {
				break
			}
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: "q", Value: value}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err == nil {
					acked.Add(int64(len(r.Value)))
				}
			})
		}
		n := acked.Load() - base
		elapsed := time.Since(start)
		wg.Wait()
		return result{n, elapsed, h}
	}
	var capped, free result
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); capped = run("capped", true, 4*time.Second) }()
	go func() { defer wg.Done(); free = run("free", false, 3*time.Second) }()
	wg.Wait()

	rate := func(r result) float64 { return float64(r.bytes) / r.elapsed.Seconds() }
	t.Logf("capped: %.0f B/s (%d throttles), free: %.0f B/s (%d throttles)", rate(capped), capped.throttle.n.Load(), rate(free), free.throttle.n.Load())
	if r := rate(capped); r < 0.5*quotaRate || r > 1.6*quotaRate {
		t.Errorf("capped producer got %.0f B/s, want about %d", r, quotaRate)
	}
	if capped.throttle.after.Load() == 0 {
		t.Error("capped producer saw no throttle_time_ms applied after the response")
	}
	if free.throttle.n.Load() != 0 {
		t.Errorf("unquoted producer was throttled %d times", free.throttle.n.Load())
	}
	if r := rate(free); r < 3*quotaRate {
		t.Errorf("unquoted producer got only %.0f B/s", r)
	}
}

// TestFetchQuota caps a consumer at 1 MB/s (consumer_byte_rate of user
// ANONYMOUS, the PLAINTEXT principal, with its client id): it reads about
// 1 MB/s and is told to back off, while another client id of the same
// user, under the user's default client quota of 1 GB/s, reads the same
// data unthrottled.
func TestFetchQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("consumes for seconds")
	}
	b := startTestBroker(t, t.TempDir(), map[string]string{"quota.window.num": "3"})
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "fq", 1, nil)
	value := make([]byte, 10<<10)
	for i := 0; i < 1000; i++ { // 10 MB
		cl.Produce(ctx, &kgo.Record{Topic: "fq", Partition: 0, Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const quotaRate = 1 << 20
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: quotaEntity("user", "ANONYMOUS", "client-id", "slow"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: quotaRate}}},
		{Entity: quotaEntity("user", "ANONYMOUS", "client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 1 << 30}}},
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("alter: %v %v", res, err)
	}
	consume := func(clientID string, d time.Duration) (float64, *throttleHook) {
		h := &throttleHook{}
		c := newClient(t, b, kgo.ClientID(clientID), kgo.WithHooks(h), kgo.ConsumeTopics("fq"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var n int64
		var start time.Time
		for {
			fs := c.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			if start.IsZero() && (h.n.Load() > 0 || clientID != "slow") {
				start, n = time.Now(), 0
			}
			fs.EachRecord(func(r *kgo.Record) { n += int64(len(r.Value)) })
			if !start.IsZero() && (time.Since(start) >= d || n >= 9<<20) {
				return float64(n) / time.Since(start).Seconds(), h
			}
		}
	}
	slow, sh := consume("slow", 3*time.Second)
	fast, fh := consume("fast", 3*time.Second)
	t.Logf("slow: %.0f B/s (%d throttles); fast: %.0f B/s (%d throttles)", slow, sh.n.Load(), fast, fh.n.Load())
	if slow < 0.4*quotaRate || slow > 1.8*quotaRate {
		t.Errorf("capped consumer read %.0f B/s, want about %d", slow, quotaRate)
	}
	if sh.after.Load() == 0 {
		t.Error("capped consumer saw no throttle")
	}
	if fh.n.Load() != 0 || fast < 3*quotaRate {
		t.Errorf("uncapped consumer: %.0f B/s, %d throttles", fast, fh.n.Load())
	}
}
