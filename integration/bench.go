package integration

// The acks=all produce measurement that BenchmarkProduceAcksAll here and
// compat's BenchmarkClusterAcksAll (three kbrokers beside three Apache Kafka
// nodes) share, so that both report the same thing.

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceInFlight bounds the records ProduceAcksAll leaves unacknowledged,
// so that latency is that of a loaded producer, not of a queue of every
// record of the run.
const ProduceInFlight = 256

// ProduceResult is what ProduceAcksAll measured.
type ProduceResult struct {
	Records int
	Bytes   int64
	Elapsed time.Duration
	// P50 and P99 are of the time from a record's Produce call to its
	// acknowledgement.
	P50, P99 time.Duration
}

// MBps is the payload in MB (10^6 bytes) per second.
func (r ProduceResult) MBps() float64 { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

// IncompressibleValues returns n record values of size bytes each, from
// crypto/rand, carved from one buffer.
func IncompressibleValues(n, size int) ([][]byte, error) {
	pool := make([]byte, n*size)
	if _, err := rand.Read(pool); err != nil {
		return nil, fmt.Errorf("crypto/rand: %w", err)
	}
	values := make([][]byte, n)
	for i := range values {
		values[i] = pool[i*size : (i+1)*size : (i+1)*size]
	}
	return values, nil
}

// ProduceAcksAll produces every value as one record to topic (an existing
// topic) through an idempotent franz-go producer with acks=all, no
// compression and no linger, franz-go's defaults otherwise, at most
// ProduceInFlight records unacknowledged. Without a linger a batch leaves
// as soon as a request may, so the latency is the broker's (and its
// replication's); franz-go's default 10 ms linger would hold ProduceInFlight
// records to about 25 MB/s on any broker, and the numbers would measure the
// linger. One record produced and acknowledged first warms the client's
// metadata and connections and is not counted.
func ProduceAcksAll(ctx context.Context, seeds []string, topic string, values [][]byte) (ProduceResult, error) {
	if len(values) == 0 {
		return ProduceResult{}, fmt.Errorf("no values to produce")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		return ProduceResult{}, err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: values[0]}).FirstErr(); err != nil {
		return ProduceResult{}, fmt.Errorf("warm-up produce to %s: %w", topic, err)
	}
	lat := make([]time.Duration, len(values))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		total    int64
	)
	sem := make(chan struct{}, ProduceInFlight)
	start := time.Now()
	for i, v := range values {
		sem <- struct{}{}
		wg.Add(1)
		total += int64(len(v))
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(sent)
			<-sem
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(start)
	if firstErr != nil {
		return ProduceResult{}, fmt.Errorf("produce to %s: %w", topic, firstErr)
	}
	slices.Sort(lat)
	return ProduceResult{Records: len(values), Bytes: total, Elapsed: el,
		P50: lat[len(lat)/2], P99: lat[len(lat)*99/100]}, nil
}
