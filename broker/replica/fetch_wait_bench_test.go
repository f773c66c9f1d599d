package replica

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkParkedFetchWake appends small batches, one partition at a time,
// to a topic of 200 partitions on which 0 or 8 fetches are parked (MinBytes
// never reached): the cost per append includes waking the parked fetches
// and what they do on each wake-up. cpu-µs/op is the process's CPU time
// (user and system, every goroutine) per append, steadier than wall time
// on a shared machine.
func BenchmarkParkedFetchWake(b *testing.B) {
	for _, parked := range []int{0, 8} {
		b.Run(fmt.Sprintf("parked=%d", parked), func(b *testing.B) { benchParkedFetchWake(b, 200, parked) })
	}
}

func benchParkedFetchWake(b *testing.B, partitions int32, parked int) {
	dir := b.TempDir()
	cfg, _, err := config.ParseConfig(map[string]string{"log.dirs": dir})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Now = time.Now
	closing := make(chan struct{})
	m := NewManager(cfg, closing)
	if err := m.OpenDirs(nil); err != nil {
		b.Fatal(err)
	}
	store, err := controller.OpenFileStore(dir, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	if err := m.Load(store); err != nil {
		b.Fatal(err)
	}
	t, kerrv, msg := m.CreateTopic("wake", partitions, 1, nil, false)
	if kerrv != nil {
		b.Fatalf("CreateTopic: %v %s", kerrv, msg)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 600_000
	req.MinBytes = 1 << 30
	req.MaxBytes = 1 << 30
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "wake"
	for i := int32(0); i < partitions; i++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = i
		rp.PartitionMaxBytes = 1 << 20
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	batch, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
		[]records.Record{{Value: make([]byte, 100)}})
	if err != nil {
		b.Fatal(err)
	}
	h, _ := records.ParseHeader(batch)
	// The first append of a partition writes its leader-epoch checkpoint
	// (an fsync): done before the timer, and before the fetches park.
	for _, p := range t.Partitions {
		if res := m.AppendRecords(p, batch, h); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	var wg sync.WaitGroup
	var answered atomic.Int32
	for range parked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := *req
			m.Fetch(&r, r.ResponseKind().(*kmsg.FetchResponse))
			answered.Add(1)
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := range b.N {
		if res := m.AppendRecords(t.Partitions[int32(i)%partitions], batch, h); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	b.StopTimer()
	if n := answered.Load(); n != 0 {
		b.Fatalf("%d parked fetches answered before MinBytes", n)
	}
	close(closing)
	wg.Wait()
	m.Stop()
	if err := m.CloseStorage(); err != nil {
		b.Error(err)
	}
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
