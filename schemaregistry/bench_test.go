package schemaregistry_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// BenchmarkGetSchemaByID measures GET /schemas/ids/{id} over keep-alive
// connections from parallel clients: requests/s and the p99 latency.
//
//	go test ./schemaregistry/ -run '^$' -bench GetSchemaByID -benchtime 3s
func BenchmarkGetSchemaByID(b *testing.B) {
	rb := startRegistry(b, b.TempDir())
	rb.expect("POST", "/subjects/bench-value/versions", schemaBody(userV2, ""), 200, `{"id":1}`)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			resp, err := hc.Get(rb.url + "/schemas/ids/1")
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkRegister measures registrations of new schemas (each one a
// barrier and a record written, then read back).
//
//	go test ./schemaregistry/ -run '^$' -bench Register -benchtime 2s
func BenchmarkRegister(b *testing.B) {
	rb := startRegistry(b, b.TempDir())
	rb.expect("PUT", "/config", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		r := rb.do("POST", "/subjects/bench/versions", schemaBody(fmt.Sprintf(`{"type":"fixed","name":"F","size":%d}`, i+1), ""))
		if r.status != 200 {
			b.Fatalf("%d %s", r.status, r.body)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "registrations/s")
}

// BenchmarkProduceSchemaValidation: franz-go produces 1 KiB records in
// the registry's wire format to a topic with
// confluent.value.schema.validation off and on, rounds alternating in one
// run; MB/s of each (the cost of validation is the batch decoded once
// more and one lookup per id per batch).
//
//	go test ./schemaregistry/ -run '^$' -bench ProduceSchemaValidation -benchtime 200000x
func BenchmarkProduceSchemaValidation(b *testing.B) {
	rb := startRegistry(b, b.TempDir())
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(rb.b.Addrs()[0].String()), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, v := range map[string]string{"plain": "false", "validated": "true"} {
		res, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"confluent.value.schema.validation": kadm.StringPtr(v)}, topic)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	reg, err := sr.NewClient(sr.URLs(rb.url))
	if err != nil {
		b.Fatal(err)
	}
	var ids [2]int
	for i, topic := range []string{"plain", "validated"} {
		ss, err := reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: `"bytes"`})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = ss.ID
	}
	value := func(id int) []byte {
		var h sr.ConfluentHeader
		v, _ := h.AppendEncode(nil, id, nil)
		return append(v, make([]byte, 1019)...)
	}
	const rounds = 4
	per := max(b.N/rounds, 1)
	var took [2]time.Duration
	b.ResetTimer()
	for range rounds {
		for i, topic := range []string{"plain", "validated"} {
			v := value(ids[i])
			start := time.Now()
			var wg sync.WaitGroup
			var firstErr error
			var mu sync.Mutex
			for range per {
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						mu.Lock()
						firstErr = cmp.Or(firstErr, err)
						mu.Unlock()
					}
					wg.Done()
				})
			}
			wg.Wait()
			took[i] += time.Since(start)
			if firstErr != nil {
				b.Fatalf("%s: %v", topic, firstErr)
			}
		}
	}
	b.StopTimer()
	mb := float64(per*rounds*1024) / 1e6
	off, on := mb/took[0].Seconds(), mb/took[1].Seconds()
	b.ReportMetric(off, "MB/s-off")
	b.ReportMetric(on, "MB/s-on")
	b.ReportMetric(on/off, "on/off")
}
