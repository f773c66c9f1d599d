package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnKafkaJSConsumeTransformProduce runs kafkajs's consume-transform-
// produce loop (compat/js/kafkajs_client.js transform: a read_committed
// consumer in a group, a transactional producer, sendOffsets per batch) as
// Node processes, as TestTxnConsumeTransformProduceExactlyOnce does for
// franz-go:
//
//  1. the first process transforms a third of the input, then leaves a
//     transaction open (records sent, offsets added) and is killed with
//     SIGKILL;
//  2. a second process with the same transactional id fences it (its open
//     transaction is aborted) and goes on; the broker is killed with
//     SIGKILL while it runs and restarted, and more input arrives after;
//  3. when the group's committed offsets reach the input's end, a
//     read_committed consumer must find every input record exactly once
//     in the output, and a read_uncommitted one also the aborted copies
//     of the killed process's open transaction.
func TestTxnKafkaJSConsumeTransformProduce(t *testing.T) {
	c := kafkajsClient(t)
	recordCap(t, "kafkajs", c.version(t), capTxn)
	b := startBroker(t, t.TempDir(), matrixOverrides...)
	adm := newAdmin(t, b.Addr())
	const (
		in, out, group, txnID = "js-eos-in", "js-eos-out", "js-eos-group", "js-eos-transformer"
		parts                 = 3
		n                     = 600 // input records, half before the broker restart, half after
	)
	createTopic(t, adm, in, parts, nil)
	createTopic(t, adm, out, parts, nil)
	// Many small produce requests, so that the input is many small
	// batches and each transformer batch (1 KiB fetches) a few of them.
	produceInput := func(from, to int) {
		cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(in), kgo.ProducerLinger(0))
		defer cl.Close()
		for i := from; i < to; i += 10 {
			var rs []*kgo.Record
			for j := i; j < min(i+10, to); j++ {
				rs = append(rs, &kgo.Record{Key: []byte("k" + strconv.Itoa(j)), Value: []byte(strconv.Itoa(j))})
			}
			produceSync(t, cl, rs)
		}
	}
	produceInput(0, n/2)

	// 1. Transform a third, leave a transaction open, SIGKILL.
	start := time.Now()
	t1 := startTransformer(t, c, b.Addr(), in, out, group, txnID, n/3)
	openN := t1.waitOpen(t, 60*time.Second)
	t1.kill()
	t.Logf("first transformer: %d records committed, %d left in an open transaction, killed after %v",
		t1.committed.Load(), openN, time.Since(start).Round(time.Millisecond))

	// 2. A new process with the same transactional id; SIGKILL the broker
	// while it works, then more input.
	t2 := startTransformer(t, c, b.Addr(), in, out, group, txnID, 0)
	waitFor(t, 60*time.Second, "the second transformer to commit transactions", func() bool {
		t2.alive(t)
		return t2.committed.Load() >= 30
	})
	b.KillAndRestart()
	t.Logf("broker killed and restarted after the second transformer committed %d records", t2.committed.Load())
	produceInput(n/2, n)

	// 3. Wait until the group's committed offsets are the input's end.
	ends := endOffsets(t, adm, in)
	fetchCtx := testCtx(t)
	waitFor(t, 60*time.Second, "the transformer to commit offsets up to the input's end", func() bool {
		t2.alive(t)
		committed, err := adm.FetchOffsets(fetchCtx, group)
		if err != nil {
			return false
		}
		for p, end := range ends {
			o, ok := committed.Lookup(in, p)
			if !ok || o.Err != nil || o.At != end {
				return false
			}
		}
		return true
	})
	t2.stop(t)
	if testing.Verbose() {
		t.Logf("--- second transformer's stderr ---\n%s", t2.stderr.String())
	}
	t.Logf("input transformed %v after the start; second transformer committed %d records", time.Since(start).Round(time.Millisecond), t2.committed.Load())

	checkExactlyOnceOutput(t, b.Addr(), out, parts, n, openN)
	b.Alive()
}

// checkExactlyOnceOutput reads a chain's output topic up to fresh sentinel
// records: read_committed must hold each of the n inputs ("0".."n-1")
// exactly once, and read_uncommitted must also show the openN records of
// the transaction that was abandoned and aborted.
func checkExactlyOnceOutput(t *testing.T, addr, out string, parts int32, n, openN int) {
	t.Helper()
	sentinels := produceSentinels(t, addr, out, parts)
	got := consumeToSentinels(t, addr, out, parts, sentinels, kgo.ReadCommitted())
	seen := map[string]int{}
	for _, r := range got {
		seen[string(r.Value)]++
	}
	for i := 0; i < n; i++ {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("input %d appears %d times in the committed output", i, c)
		}
	}
	if len(got) != n {
		t.Errorf("read_committed consumer got %d records, want %d", len(got), n)
	}
	all := consumeToSentinels(t, addr, out, parts, sentinels, kgo.ReadUncommitted())
	if len(all) < n+openN {
		t.Errorf("read_uncommitted consumer got %d records, want at least %d (%d input, %d of the aborted open transaction)", len(all), n+openN, n, openN)
	}
	t.Logf("output: %d committed records, %d in all", len(got), len(all))
}

// transformerProc is one `kafkajs_client.js transform` process.
type transformerProc struct {
	name      string
	cmd       *exec.Cmd
	stderr    *syncBuffer
	committed atomic.Int64  // last {"committed": N} line
	opened    chan int      // receives the {"open": N} line's N
	done      chan struct{} // closed when the process has exited
	err       error         // Wait's result, after done
	killed    atomic.Bool
}

// startTransformer starts a transformer process (pauseAfter 0: never
// pauses); it is killed at test cleanup at the latest.
func startTransformer(t *testing.T, c *scriptClient, addr, in, out, group, txnID string, pauseAfter int) *transformerProc {
	t.Helper()
	args := append(append([]string{}, c.argv[1:]...), "transform", addr, in, out, group, txnID, strconv.Itoa(pauseAfter))
	cmd := exec.Command(c.argv[0], args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = groupProcAttr()
	tp := &transformerProc{name: filepath.Base(c.argv[len(c.argv)-1]) + " transform", cmd: cmd,
		stderr: &syncBuffer{}, opened: make(chan int, 1), done: make(chan struct{})}
	cmd.Stderr = tp.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", tp.name, err)
	}
	var lines sync.WaitGroup
	lines.Add(1)
	go func() {
		defer lines.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev struct {
				Committed *int64 `json:"committed"`
				Open      *int   `json:"open"`
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				fmt.Fprintf(tp.stderr, "unparseable stdout line %q\n", sc.Text())
				continue
			}
			if ev.Committed != nil {
				tp.committed.Store(*ev.Committed)
			}
			if ev.Open != nil {
				select {
				case tp.opened <- *ev.Open:
				default:
				}
			}
		}
	}()
	go func() {
		lines.Wait() // Wait closes the pipe: read it all first
		tp.err = cmd.Wait()
		close(tp.done)
	}()
	t.Cleanup(func() {
		tp.kill()
		if t.Failed() {
			t.Logf("--- %s (pid %d) stderr ---\n%s", tp.name, cmd.Process.Pid, tp.stderr.String())
		}
	})
	return tp
}

// alive fails the test if the process has exited.
func (tp *transformerProc) alive(t *testing.T) {
	t.Helper()
	select {
	case <-tp.done:
		t.Fatalf("%s exited: %v\n--- stderr ---\n%s", tp.name, tp.err, tp.stderr.String())
	default:
	}
}

// waitOpen waits for the process to report its open transaction.
func (tp *transformerProc) waitOpen(t *testing.T, timeout time.Duration) int {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case n := <-tp.opened:
		return n
	case <-tp.done:
		t.Fatalf("%s exited before opening its paused transaction: %v\n--- stderr ---\n%s", tp.name, tp.err, tp.stderr.String())
	case <-timer.C:
		t.Fatalf("%s did not open its paused transaction within %v (committed %d)", tp.name, timeout, tp.committed.Load())
	}
	return 0
}

// kill sends SIGKILL to the process group and waits for the exit.
func (tp *transformerProc) kill() {
	select {
	case <-tp.done:
		return
	default:
	}
	tp.killed.Store(true)
	_ = killProcGroup(tp.cmd)
	<-tp.done
}

// stop sends SIGTERM (the script disconnects its consumer and producer)
// and waits for a clean exit.
func (tp *transformerProc) stop(t *testing.T) {
	t.Helper()
	tp.alive(t)
	if err := tp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", tp.name, err)
	}
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-tp.done:
		if tp.err != nil {
			t.Fatalf("%s exited after SIGTERM with %v\n--- stderr ---\n%s", tp.name, tp.err, tp.stderr.String())
		}
	case <-timer.C:
		tp.kill()
		t.Fatalf("%s did not exit within 30s of SIGTERM", tp.name)
	}
}

// sentinelKey is the key of the plain record produceSentinels writes.
const sentinelKey = "sentinel"

// produceSentinels writes one non-transactional record to each partition of
// topic and returns their offsets: a consumer that has read them has read
// everything before.
func produceSentinels(t *testing.T, addr, topic string, parts int32) map[int32]int64 {
	t.Helper()
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	var rs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(sentinelKey)})
	}
	produceSync(t, cl, rs)
	out := map[int32]int64{}
	for _, r := range rs {
		out[r.Partition] = r.Offset
	}
	return out
}

// consumeToSentinels reads every partition of topic from the start with
// franz-go at the given isolation level until each partition's sentinel
// arrived, and returns the records before the sentinels.
func consumeToSentinels(t *testing.T, addr, topic string, parts int32, sentinels map[int32]int64, iso kgo.IsolationLevel) []*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < parts; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var got []*kgo.Record
	done := map[int32]bool{}
	for len(done) < int(parts) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d sentinels of %q read before the deadline (%d records)", len(done), parts, topic, len(got))
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case done[r.Partition]:
				t.Errorf("partition %d: record at offset %d after the sentinel", r.Partition, r.Offset)
			case r.Offset == sentinels[r.Partition]:
				done[r.Partition] = true
			default:
				got = append(got, r)
			}
		})
	}
	return got
}
