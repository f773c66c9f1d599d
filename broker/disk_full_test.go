//go:build linux

package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// mountTmpfs mounts a tmpfs of the given size ("4m") on a fresh directory
// and unmounts it when the test ends. It needs root (CI and the sandbox run
// tests as root); without it the test fails rather than skips, so a disk-full
// regression cannot hide behind a skipped test.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mounting a %s tmpfs on %s for a real full disk failed: %v (this test must run as root on Linux)", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// logCapture is a slog handler that keeps every record's level and message.
type logCapture struct {
	mu   *sync.Mutex
	recs *[]string
}

func newLogCapture() logCapture { return logCapture{mu: &sync.Mutex{}, recs: new([]string)} }

func (c logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c logCapture) WithGroup(string) slog.Handler            { return c }
func (c logCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.recs = append(*c.recs, r.Level.String()+" "+r.Message)
	return nil
}

// count is how many records at level have a message containing substr.
func (c logCapture) count(level slog.Level, substr string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range *c.recs {
		if strings.HasPrefix(r, level.String()+" ") && strings.Contains(r, substr) {
			n++
		}
	}
	return n
}

// startLoggedBroker is startTestBroker with the broker's log going to h.
func startLoggedBroker(t *testing.T, dir string, h slog.Handler, overrides map[string]string) *Broker {
	t.Helper()
	p := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir, "http.listeners": "", "schema.registry.listeners": "", "rest.proxy.listeners": ""}
	for k, v := range overrides {
		p[k] = v
	}
	cfg, _, err := config.ParseConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(h)
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// consumeAll reads the topic's single partition from the start up to its
// end and returns the values by offset.
func consumeAll(t *testing.T, ctx context.Context, b *Broker, topic string, want int) map[int64]string {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	got := map[int64]string{}
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), want, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = string(r.Value) })
	}
	return got
}

// TestDiskFull fills a real 4 MiB filesystem under a running broker: the
// producer gets KAFKA_STORAGE_ERROR, the broker logs the failure once (not
// per request), every acknowledged record stays readable while the disk is
// full and after a restart, and appends succeed again once space is freed.
func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "4m")
	logs := newLogCapture()
	const topic = "full"
	b := startLoggedBroker(t, dir, logs, map[string]string{"num.partitions": "1"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	acked := map[int64]string{}
	value := func(i int) []byte {
		v := make([]byte, 16<<10)
		copy(v, fmt.Sprintf("record-%06d-", i))
		return v
	}
	produce := func(i int) error {
		r := &kgo.Record{Value: value(i)}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
		acked[r.Offset] = string(r.Value)
		return nil
	}
	i := 0
	for ; i < 10; i++ {
		if err := produce(i); err != nil {
			t.Fatalf("produce %d before the disk is full: %v", i, err)
		}
	}

	// Ballast leaves about 200 KiB free: a few more records fit, then none.
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	ballast := filepath.Join(dir, "ballast")
	if free := int64(st.Bavail) * st.Bsize; free > 200<<10 {
		if err := os.WriteFile(ballast, make([]byte, free-200<<10), 0o644); err != nil {
			t.Fatalf("writing ballast of %d bytes: %v", free-200<<10, err)
		}
	}
	var full error
	for ; i < 200 && full == nil; i++ {
		full = produce(i)
	}
	if full == nil {
		t.Fatal("200 records of 16 KiB fit in a 4 MiB filesystem")
	}
	if !errors.Is(full, kerr.KafkaStorageError) {
		t.Fatalf("produce on a full disk: %v, want KAFKA_STORAGE_ERROR", full)
	}
	for j := 0; j < 3; j++ {
		if err := produce(i + j); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("produce %d on a full disk: %v, want KAFKA_STORAGE_ERROR", j, err)
		}
	}
	i += 3
	if n := logs.count(slog.LevelError, "append failed"); n != 1 {
		t.Errorf("append failure logged %d times, want once", n)
	}

	// Reads go on: exactly the acknowledged records, nothing of the failed.
	got := consumeAll(t, ctx, b, topic, len(acked))
	checkSame(t, got, acked)
	if end := endOffset(t, ctx, prod, topic); end != int64(len(acked)) {
		t.Errorf("end offset %d with %d records acknowledged", end, len(acked))
	}

	// Space freed: appends succeed again, and that is logged once.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 5; j++ {
		if err := produce(i + j); err != nil {
			t.Fatalf("produce after freeing space: %v", err)
		}
	}
	if n := logs.count(slog.LevelInfo, "appends succeed again"); n != 1 {
		t.Errorf("recovery logged %d times, want once", n)
	}
	prod.Close()
	checkSame(t, consumeAll(t, ctx, b, topic, len(acked)), acked)

	// Everything acknowledged survives a restart.
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	b2 := startLoggedBroker(t, dir, newLogCapture(), map[string]string{"num.partitions": "1"})
	checkSame(t, consumeAll(t, ctx, b2, topic, len(acked)), acked)
}

// endOffset lists the end offset of the topic's partition 0.
func endOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1 // latest
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatal(err)
	}
	return p.Offset
}

// checkSame compares records read with records acknowledged, by offset.
func checkSame(t *testing.T, got, want map[int64]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("read %d records, %d acknowledged", len(got), len(want))
	}
	for off, v := range want {
		if got[off] != v {
			t.Errorf("offset %d: read %.20q, acknowledged %.20q", off, got[off], v)
		}
	}
}
