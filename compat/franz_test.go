package compat

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// codecs lists every compression codec a producer may use.
var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// TestFranzCodecs produces 1000 keyed records with headers per codec
// (acks=all, idempotent) and consumes them back by partition.
func TestFranzCodecs(t *testing.T) {
	b := startBroker(t, t.TempDir())
	adm := newAdmin(t, b.Addr())
	const partitions, n = 4, 1000
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			createTopic(t, adm, topic, partitions, nil)
			prod := newKgo(t, b.Addr(),
				kgo.ProducerBatchCompression(c.codec),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerLinger(5*time.Millisecond),
			)
			rs := keyedRecords(topic, 0, n)
			produceSync(t, prod, rs)
			checkDense(t, byPartition(rs))
			got := consumeN(t, b.Addr(), topic, partitions, n)
			compareByPartition(t, rs, got)
		})
	}
	b.Alive()
}

// TestFranzRestart produces half the records, stops the broker gracefully,
// restarts it on the same data directory, produces the rest and checks that
// everything is there with dense offsets.
func TestFranzRestart(t *testing.T) {
	b := startBroker(t, t.TempDir())
	const topic, partitions, n = "restart", 3, 1000
	createTopic(t, newAdmin(t, b.Addr()), topic, partitions, nil)

	first := keyedRecords(topic, 0, n/2)
	prod := newKgo(t, b.Addr(), kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	produceSync(t, prod, first)
	prod.Close()

	b.StopAndRestart()

	second := keyedRecords(topic, n/2, n/2)
	prod2 := newKgo(t, b.Addr(), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	produceSync(t, prod2, second)

	all := append(first, second...)
	parts := byPartition(all)
	checkDense(t, parts)
	got := consumeN(t, b.Addr(), topic, partitions, n)
	checkDense(t, byPartition(got))
	compareByPartition(t, all, got)

	ends, err := newAdmin(t, b.Addr()).ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	for p, rs := range parts {
		lo, ok := ends.Lookup(topic, p)
		if !ok || lo.Err != nil || lo.Offset != int64(len(rs)) {
			t.Fatalf("end offset of partition %d = %+v, want %d", p, lo, len(rs))
		}
	}
}

// TestFranzSIGINT checks that SIGINT is a graceful shutdown too (exit code
// 0) and that the data is there after a restart.
func TestFranzSIGINT(t *testing.T) {
	b := startBroker(t, t.TempDir())
	const topic = "sigint"
	createTopic(t, newAdmin(t, b.Addr()), topic, 2, nil)
	rs := keyedRecords(topic, 0, 100)
	prod := newKgo(t, b.Addr())
	produceSync(t, prod, rs)
	prod.Close()
	b.StopWith(syscall.SIGINT)
	b.Restart()
	compareByPartition(t, rs, consumeN(t, b.Addr(), topic, 2, len(rs)))
}

// ackLog records, under a mutex, which records of a produce stream were
// acknowledged and at which partition and offset.
type ackLog struct {
	mu    sync.Mutex
	acked map[string]*kgo.Record // by value
	sent  map[string]bool        // every value handed to Produce
}

// TestFranzKillMidStream kills the broker with SIGKILL while an idempotent
// acks=all producer streams records, restarts it on the same data directory,
// and checks that every acknowledged record is present exactly once at its
// acknowledged offset, unacknowledged records at most once, and offsets dense.
func TestFranzKillMidStream(t *testing.T) {
	// 1 MiB segments, so that recovery crosses several segments.
	b := startBroker(t, t.TempDir(), "log.segment.bytes=1048576")
	const topic, partitions = "killed", 3
	createTopic(t, newAdmin(t, b.Addr()), topic, partitions, nil)

	prod := newKgo(t, b.Addr(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(2000),
	)
	acks := &ackLog{acked: make(map[string]*kgo.Record), sent: make(map[string]bool)}
	// About 1 KiB per record, so 5000 records fill several segments.
	padding := []kgo.RecordHeader{{Key: "pad", Value: make([]byte, 1000)}}
	enoughAcks := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			v := "rec-" + strconv.Itoa(i)
			r := &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i % 17)), Value: []byte(v), Headers: padding}
			acks.mu.Lock()
			acks.sent[v] = true
			acks.mu.Unlock()
			prod.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				acks.mu.Lock()
				acks.acked[string(r.Value)] = r
				n := len(acks.acked)
				acks.mu.Unlock()
				if n >= 5000 {
					once.Do(func() { close(enoughAcks) })
				}
			})
		}
	}()
	stopProducing := func() {
		cancel()
		wg.Wait()
		prod.Close() // fails whatever is still buffered
	}

	select {
	case <-enoughAcks:
	case <-time.After(opTimeout):
		stopProducing()
		t.Fatalf("fewer than 5000 records acknowledged within %v", opTimeout)
	}
	b.Kill()
	stopProducing()

	// Every promise has run once Close returned; copy what was acknowledged.
	acks.mu.Lock()
	acked := make(map[string]*kgo.Record, len(acks.acked))
	for v, r := range acks.acked {
		acked[v] = r
	}
	sent := acks.sent
	acks.mu.Unlock()
	b.Restart()

	ends, err := newAdmin(t, b.Addr()).ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatalf("ListEndOffsets after restart: %v", err)
	}
	total := 0
	ends.Each(func(lo kadm.ListedOffset) {
		if lo.Err != nil {
			t.Fatalf("end offset %s[%d]: %v", lo.Topic, lo.Partition, lo.Err)
		}
		total += int(lo.Offset)
	})
	if total < len(acked) {
		t.Fatalf("after kill -9 the log holds %d records, but %d were acknowledged", total, len(acked))
	}
	got := consumeN(t, b.Addr(), topic, partitions, total)
	checkDense(t, byPartition(got))
	seen := make(map[string]*kgo.Record, len(got))
	for _, r := range got {
		v := string(r.Value)
		if prev, dup := seen[v]; dup {
			t.Fatalf("record %q stored twice: %s[%d]@%d and @%d", v, topic, r.Partition, prev.Offset, r.Offset)
		}
		if !sent[v] {
			t.Fatalf("consumed record %q that was never produced", v)
		}
		seen[v] = r
	}
	for v, a := range acked {
		r, ok := seen[v]
		if !ok {
			t.Fatalf("acknowledged record %q (partition %d offset %d) lost after kill -9", v, a.Partition, a.Offset)
		}
		if r.Partition != a.Partition || r.Offset != a.Offset {
			t.Fatalf("acknowledged record %q was at %d@%d, found at %d@%d after restart", v, a.Partition, a.Offset, r.Partition, r.Offset)
		}
	}
	t.Logf("acked %d, stored %d (%d unacknowledged records survived)", len(acked), total, total-len(acked))

	// The restarted broker keeps appending right after the recovered end.
	more := keyedRecords(topic, 0, 30)
	produceSync(t, newKgo(t, b.Addr()), more)
	for _, r := range more {
		lo, _ := ends.Lookup(topic, r.Partition)
		if r.Offset < lo.Offset {
			t.Fatalf("record produced after restart got offset %d in partition %d, below the recovered end %d", r.Offset, r.Partition, lo.Offset)
		}
	}
	checkDense(t, byPartition(consumeN(t, b.Addr(), topic, partitions, total+len(more))))
}

// TestFranzMessageTooLarge checks that a batch larger than message.max.bytes
// is refused with MESSAGE_TOO_LARGE and that normal produces still work.
func TestFranzMessageTooLarge(t *testing.T) {
	b := startBroker(t, t.TempDir(), "message.max.bytes=10000")
	const topic = "big"
	createTopic(t, newAdmin(t, b.Addr()), topic, 1, nil)
	prod := newKgo(t, b.Addr(), kgo.RecordRetries(3), kgo.ProducerBatchCompression(kgo.NoCompression()))

	big := make([]byte, 20000)
	if _, err := rand.Read(big); err != nil {
		t.Fatalf("crypto/rand: %v", err)
	}
	err := produceBounded(t, prod, &kgo.Record{Topic: topic, Value: big})
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("producing 20000 bytes with message.max.bytes=10000: err = %v, want MESSAGE_TOO_LARGE", err)
	}
	small := []*kgo.Record{{Topic: topic, Value: []byte("fits")}}
	produceSync(t, newKgo(t, b.Addr()), small)
	got := consumeN(t, b.Addr(), topic, 1, 1)
	if string(got[0].Value) != "fits" {
		t.Fatalf("consumed %q, want %q", got[0].Value, "fits")
	}
}

// TestFranzSecondBrokerSameDir checks that a second broker on a data
// directory in use exits non-zero while the first one keeps serving.
func TestFranzSecondBrokerSameDir(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	const topic = "locked"
	createTopic(t, newAdmin(t, b.Addr()), topic, 1, nil)

	code, out := runBrokerToExit(t, dir)
	if code == 0 {
		t.Fatalf("second kbroker on the same log.dirs exited 0, want non-zero\n%s", out)
	}
	t.Logf("second broker exited %d", code)

	b.Alive()
	rs := keyedRecords(topic, 0, 10)
	produceSync(t, newKgo(t, b.Addr()), rs)
	compareByPartition(t, rs, consumeN(t, b.Addr(), topic, 1, 10))
	b.Stop()
}
