package replica

import (
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
)

// BenchmarkAcksAll produces 1 KiB records one at a time with acks=all to a
// leader with two followers in the same process (real TCP, real logs) and
// reports the p50 and p99 latency of a produce.
func BenchmarkAcksAll(b *testing.B) {
	c := newTestCluster(b, 3, ReplicationConfig{FetchWaitMax: 500 * time.Millisecond}, false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	val := make([]byte, 1024)
	rand.Read(val)
	p := c.part(1, 0)
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(len(val)))
	b.ResetTimer()
	for range b.N {
		batch, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
			[]records.Record{{Value: val}})
		if err != nil {
			b.Fatal(err)
		}
		h, _ := records.ParseHeader(batch)
		start := time.Now()
		if res := c.broker(1).m.Produce(p, batch, h, -1, start.Add(10*time.Second)); res.Err != nil {
			b.Fatal(res.Err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
