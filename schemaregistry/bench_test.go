package schemaregistry_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
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
