package integration

// What BenchmarkClusterScale here and compat's BenchmarkKafkaClusterScale
// (the same operations on Apache Kafka 3.9 in ZooKeeper mode) share, so
// that both measure alike: the knobs, and the wait on each broker's own
// Metadata answer (raw requests, which a client library's cache would
// hide).

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ScaleTopicPrefix starts the name of every topic the cluster scale
// benchmarks create; WaitScale counts only those topics.
const ScaleTopicPrefix = "scale-"

// ScaleTopicNames are the names of the scale benchmarks' topics.
func ScaleTopicNames(topics int) []string {
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("%s%04d", ScaleTopicPrefix, i)
	}
	return names
}

// CreateScaleTopics creates names, perTopic partitions each at RF 3, ten
// topics a CreateTopics request, through adm, and returns once every
// request is answered without error. The broker answers each once every
// broker's metadata has the topics, or after 120 s.
func CreateScaleTopics(ctx context.Context, adm *kadm.Client, names []string, perTopic int) error {
	adm.SetTimeoutMillis(120_000)
	for i := 0; i < len(names); i += 10 {
		resp, err := adm.CreateTopics(ctx, int32(perTopic), 3, nil, names[i:min(i+10, len(names))]...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("creating %s...: %w", names[i], err)
		}
	}
	return nil
}

// EnvInt reads a positive integer knob from the environment, def when it
// is unset.
func EnvInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// SyncDisks writes back every dirty page of the machine (sync(2)) before
// a timed controlled shutdown: the three brokers of a benchmark share one
// disk, and a broker's shutdown syncs its own writes (kbroker: its whole
// file system, vfs.SyncFS), so without it the figure holds the other
// brokers' write-back of what they just did (a rejoin's catch-up).
func SyncDisks() { syscall.Sync() }

// scalePoll is how often WaitScale asks: the scale figures are as coarse.
const scalePoll = 250 * time.Millisecond

// WaitScale waits until the Metadata of a broker at addrs (of each of them,
// with fullISR) names total partitions of the ScaleTopicPrefix topics, each
// led by a live broker other than down (-1: none is down), with all three
// replicas in the ISR when fullISR. addrs are the running brokers.
//
// It asks every scalePoll: a Metadata answer of tens of thousands of
// partitions costs the broker tens of milliseconds of CPU, so asking
// every 20 ms, as other waits do, kept a broker of the 2-core machine
// busy answering the benchmark during the very failover it timed.
func WaitScale(t testing.TB, addrs []string, down int32, total int, fullISR bool) {
	t.Helper()
	waitEvery(t, 30*time.Minute, scalePoll, "every partition led by a live broker", func() (bool, error) {
		for _, addr := range addrs {
			m, err := metadata(addr)
			if err != nil {
				return false, err
			}
			n, bad := 0, []string{}
			for _, tp := range m.Topics {
				if tp.Topic == nil || !strings.HasPrefix(*tp.Topic, ScaleTopicPrefix) {
					continue
				}
				for _, p := range tp.Partitions {
					n++
					ok := p.Leader >= 0 && p.Leader != down && (!fullISR || len(p.ISR) == 3)
					if !ok && len(bad) < 3 {
						bad = append(bad, fmt.Sprintf("%s/%d leader %d isr %v", *tp.Topic, p.Partition, p.Leader, p.ISR))
					}
				}
			}
			if n != total || len(bad) > 0 {
				sort.Strings(bad)
				return false, fmt.Errorf("broker at %s: %d of %d partitions; e.g. %v", addr, n, total, bad)
			}
			if !fullISR {
				return true, nil
			}
		}
		return true, nil
	})
}

// send is one raw request to one broker: the tests ask each broker what its
// own metadata cache says, which a client library would hide.
func send(addr string, req kmsg.Request) (kmsg.Response, error) {
	conn, err := kconn.Dial(context.Background(), addr, kconn.Options{ClientID: "integration", DialTimeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.RoundTrip(req, 10*time.Second)
}

// metadata is the broker at addr's Metadata answer (v12) for topics, or
// for every topic when none is named.
func metadata(addr string, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 12, false
	for _, tn := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tn)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := send(addr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// OpenFiles is how many file descriptors process pid holds, -1 when /proc
// cannot say: at scale a broker needs some per partition replica, against
// the process's limit (ulimit -n).
func OpenFiles(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// Pid is the broker's current process id.
func (b *BrokerProc) Pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cmd.Process.Pid
}

// AckWatch is the load of a scale benchmark's rolling restart: an acks=all
// idempotent producer sending 1 KiB records to one topic as fast as they
// are acknowledged (up to the client's 10,000 buffered records), counting
// acknowledgements, failures and the longest gap between two
// acknowledgements, which is what a producer feels of the restart.
type AckWatch struct {
	cl     *kgo.Client
	stop   chan struct{}
	done   chan struct{}
	acked  atomic.Int64
	failed atomic.Int64

	mu      sync.Mutex
	lastAck time.Time
	gap     AckGap
}

// AckGap is the longest time an AckWatch's producer went without an
// acknowledgement, and when it ended (to find it in the brokers' logs).
type AckGap struct {
	Len time.Duration
	End time.Time
}

func (g AckGap) String() string {
	return fmt.Sprintf("%.2f s, ending at %s UTC", g.Len.Seconds(), g.End.UTC().Format("15:04:05.000"))
}

// StartAckWatch starts producing to topic through seeds; Stop ends it. A
// record is given five minutes before it fails (delivery.timeout.ms). With
// KBROKER_BENCH_ACK_LOG=1 the client logs at info level to stderr (what it
// saw of each restart: errors, metadata updates), with =debug at debug
// level (every request, every metadata answer's leaders).
func StartAckWatch(t testing.TB, seeds []string, topic string) *AckWatch {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(5 * time.Minute)}
	if v := os.Getenv("KBROKER_BENCH_ACK_LOG"); v == "1" || v == "debug" {
		level := kgo.LogLevelInfo
		if v == "debug" {
			level = kgo.LogLevelDebug
		}
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, func() string {
			return "ackwatch " + time.Now().UTC().Format("15:04:05.000") + " "
		})))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	w := &AckWatch{cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	ctx := context.Background()
	value := make([]byte, 1024)
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			cl.Produce(ctx, &kgo.Record{Value: value}, w.ack)
		}
	}()
	return w
}

func (w *AckWatch) ack(_ *kgo.Record, err error) {
	if err != nil {
		w.failed.Add(1)
		return
	}
	w.acked.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if gap := now.Sub(w.lastAck); !w.lastAck.IsZero() && gap > w.gap.Len {
		w.gap = AckGap{Len: gap, End: now}
	}
	w.lastAck = now
}

// Acked is how many records have been acknowledged so far.
func (w *AckWatch) Acked() int64 { return w.acked.Load() }

// SinceAck is how long the producer has gone without an acknowledgement
// (0 before the first).
func (w *AckWatch) SinceAck() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastAck.IsZero() {
		return 0
	}
	return time.Since(w.lastAck)
}

// Stop stops producing, waits for every record sent to be acknowledged or
// to fail, closes the client and returns the counts and the longest gap.
func (w *AckWatch) Stop(t testing.TB) (acked, failed int64, maxGap AckGap) {
	t.Helper()
	close(w.stop)
	<-w.done
	err := w.cl.Flush(context.Background())
	w.cl.Close()
	if err != nil {
		t.Fatalf("flushing the rolling restart's producer: %v", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked.Load(), w.failed.Load(), w.gap
}
