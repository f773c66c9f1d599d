package compat

// BenchmarkProduceConsume measures produce-then-consume throughput of 1 KiB
// incompressible values, uncompressed, through franz-go against kbroker (a
// real process, data in a temp dir), against franz-go's in-process kfake with
// its DataDir persistence on, and the raw loopback TCP limit. Run it with:
//
//	go test ./compat/ -run '^$' -bench BenchmarkProduceConsume -benchtime 3x
//
// KBROKER_BENCH_MIB sets the MiB moved per iteration (default 64). MB/s is
// the per-iteration payload over the time to produce it all (acks=all,
// idempotent) and then consume it all back; produce-MB/s and consume-MB/s
// report the two halves, and kbroker's line reports its ratio to kfake and
// to the loopback limit. KBROKER_BENCH_PPROF=host:port serves kbroker's
// /debug/pprof/ there, for a CPU or allocation profile taken during the run
// (curl host:port/debug/pprof/profile?seconds=20 > cpu.pprof).

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchValueSize is the size of one record value.
const benchValueSize = 1024

// benchPartitions is the partition count of each benchmark topic.
const benchPartitions = 4

// benchMiB is the payload per iteration, from KBROKER_BENCH_MIB.
func benchMiB(b *testing.B) int {
	s := os.Getenv("KBROKER_BENCH_MIB")
	if s == "" {
		return 64
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("KBROKER_BENCH_MIB=%q: want a positive integer", s)
	}
	return n
}

// BenchmarkProduceConsume runs the kfake, loopback and kbroker
// sub-benchmarks described at the top of this file, in that order, so that
// kbroker's line can report its ratios to the other two.
func BenchmarkProduceConsume(b *testing.B) {
	mib := benchMiB(b)
	pool := make([]byte, mib<<20)
	if _, err := rand.Read(pool); err != nil {
		b.Fatalf("crypto/rand: %v", err)
	}
	values := make([][]byte, 0, len(pool)/benchValueSize)
	for off := 0; off+benchValueSize <= len(pool); off += benchValueSize {
		values = append(values, pool[off:off+benchValueSize])
	}

	var kfakeMBps, loopMBps float64
	b.Run("kfake", func(b *testing.B) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(b.TempDir()))
		if err != nil {
			b.Fatalf("kfake: %v", err)
		}
		defer c.Close()
		kfakeMBps = benchKafka(b, c.ListenAddrs()[0], values)
	})
	b.Run("loopback", func(b *testing.B) {
		loopMBps = benchLoopback(b, int64(len(pool)))
	})
	b.Run("kbroker", func(b *testing.B) {
		var overrides []string
		if addr := os.Getenv("KBROKER_BENCH_PPROF"); addr != "" {
			overrides = append(overrides, "http.listeners=http://"+addr, "http.pprof.enable=true")
		}
		p := startBroker(b, b.TempDir(), overrides...)
		mbps := benchKafka(b, p.Addr(), values)
		if kfakeMBps > 0 {
			b.ReportMetric(mbps/kfakeMBps, "x-kfake")
		}
		if loopMBps > 0 {
			b.ReportMetric(mbps/loopMBps, "x-loopback")
		}
		p.Stop()
	})
}

// benchKafka runs b.N produce-then-consume rounds of values against the
// broker at addr, one fresh topic per round, and returns the MB/s reached.
func benchKafka(b *testing.B, addr string, values [][]byte) float64 {
	total := int64(len(values)) * benchValueSize
	b.SetBytes(total)
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(len(values)+1),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	)
	if err != nil {
		b.Fatalf("producer: %v", err)
	}
	defer prod.Close()
	adm := kadm.NewClient(prod)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	var produceTime, consumeTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		topic := fmt.Sprintf("bench-%d-%d", b.N, i)
		resp, err := adm.CreateTopic(ctx, benchPartitions, 1, nil, topic)
		if err != nil || resp.Err != nil {
			b.Fatalf("CreateTopic: %v / %v", err, resp.Err)
		}
		b.StartTimer()

		start := time.Now()
		var failed atomic.Pointer[error]
		for _, v := range values {
			prod.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			})
		}
		if err := prod.Flush(ctx); err != nil {
			b.Fatalf("flush: %v", err)
		}
		if e := failed.Load(); e != nil {
			b.Fatalf("produce: %v", *e)
		}
		mid := time.Now()
		produceTime += mid.Sub(start)

		got := benchConsume(b, ctx, addr, topic, total)
		consumeTime += time.Since(mid)
		if got != total {
			b.Fatalf("consumed %d bytes, want %d", got, total)
		}
	}
	b.StopTimer()
	perRound := float64(total) / 1e6
	b.ReportMetric(perRound*float64(b.N)/produceTime.Seconds(), "produce-MB/s")
	b.ReportMetric(perRound*float64(b.N)/consumeTime.Seconds(), "consume-MB/s")
	return perRound * float64(b.N) / (produceTime + consumeTime).Seconds()
}

// benchConsume reads every partition of topic from the start until total
// value bytes arrived, and returns the byte count.
func benchConsume(b *testing.B, ctx context.Context, addr, topic string, total int64) int64 {
	offsets := make(map[int32]kgo.Offset, benchPartitions)
	for p := int32(0); p < benchPartitions; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(50<<20),
		kgo.FetchMaxPartitionBytes(16<<20),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		b.Fatalf("consumer: %v", err)
	}
	defer cons.Close()
	var got int64
	for got < total {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("consume: %v after %d of %d bytes", ctx.Err(), got, total)
		}
		if err := fs.Err0(); err != nil {
			b.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
	}
	return got
}

// benchLoopback moves total bytes per round through one 127.0.0.1 TCP
// connection in 1 MiB writes and returns the MB/s reached.
func benchLoopback(b *testing.B, total int64) float64 {
	b.SetBytes(total)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatalf("dial: %v", err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		b.Fatalf("accept failed")
	}
	defer server.Close()

	chunk := make([]byte, 1<<20)
	if _, err := rand.Read(chunk); err != nil {
		b.Fatalf("crypto/rand: %v", err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		done := make(chan error, 1)
		go func() {
			buf := make([]byte, 1<<20)
			_, err := io.CopyBuffer(io.Discard, io.LimitReader(onlyReader{server}, total), buf)
			done <- err
		}()
		for sent := int64(0); sent < total; sent += int64(len(chunk)) {
			n := min(int64(len(chunk)), total-sent)
			if _, err := client.Write(chunk[:n]); err != nil {
				b.Fatalf("write: %v", err)
			}
		}
		if err := <-done; err != nil {
			b.Fatalf("read: %v", err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	return float64(total) * float64(b.N) / 1e6 / elapsed.Seconds()
}

// onlyReader hides everything but Read, so io.CopyBuffer uses the given
// 1 MiB buffer instead of the destination's ReaderFrom.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
