package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startTestBroker runs a broker in-process on a free loopback port with its
// data in dir; it is closed when the test ends.
func startTestBroker(t testing.TB, dir string, overrides map[string]string) *Broker {
	t.Helper()
	p := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir, "http.listeners": "", "schema.registry.listeners": "", "rest.proxy.listeners": ""}
	for k, v := range overrides {
		p[k] = v
	}
	cfg, _, err := config.ParseConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(testLogOutput(), nil))
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

func newClient(t *testing.T, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()[0].String())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestProduceConsumeRestart(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, map[string]string{"num.partitions": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	prod := newClient(t, b, kgo.DefaultProduceTopic("events"), kgo.AllowAutoTopicCreation())
	const n = 300
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	prod.Close()
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	b2 := startTestBroker(t, dir, map[string]string{"num.partitions": "3"})
	cons := newClient(t, b2, kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	next := map[int32]int64{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(seen), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			seen[string(r.Value)] = true
		})
	}
	if len(next) != 3 {
		t.Fatalf("records in %d partitions, want 3", len(next))
	}
}

// testLogOutput is where in-process brokers log: nowhere, unless KBROKER_TEST_LOG is set.
func testLogOutput() io.Writer {
	if os.Getenv("KBROKER_TEST_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}
