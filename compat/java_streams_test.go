package compat

// Kafka Streams 4.4.0's word count (compat/java/clients, WordCount.java)
// with processing.guarantee=exactly_once_v2 and a state store: it uses a
// repartition topic, a compacted changelog topic, transactions and
// read_committed consumers. The input arrives in three parts; after the
// first the Streams instance is killed with SIGKILL and restarted, after the
// second the broker is. The output must then be exactly right: for every
// word, the counts 1, 2, ..., N in order, nothing missing, nothing twice.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// streamsProc is one WordCount JVM owned by a test.
type streamsProc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	mu   sync.Mutex
	last string // the last "STATE" line
}

func startWordCount(t *testing.T, addr, appID, in, out, stateDir string) *streamsProc {
	t.Helper()
	args := append(append([]string{}, javaOpts...), "-cp", javaClasspath(t, javaMod44),
		"kbroker.compat.WordCount", addr, appID, in, out, stateDir)
	// Streams needs its JIT: the client options' C1-only limit would slow
	// the run, not shorten it.
	for i, a := range args {
		if a == "-XX:TieredStopAtLevel=1" {
			args[i] = "-XX:+TieredCompilation"
		}
	}
	p := &streamsProc{cmd: exec.Command("java", args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.SysProcAttr = groupProcAttr()
	p.cmd.Stderr = p.out
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting WordCount: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.out, line)
			if strings.HasPrefix(line, "STATE ") {
				p.mu.Lock()
				p.last = strings.TrimPrefix(line, "STATE ")
				p.mu.Unlock()
			}
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- WordCount output ---\n%s", tail(p.out.String(), 8000))
		}
	})
	return p
}

func (p *streamsProc) state() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// kill sends SIGKILL and waits for the JVM to be gone.
func (p *streamsProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = killProcGroup(p.cmd)
	<-p.done
}

func (p *streamsProc) waitRunning(t *testing.T) {
	t.Helper()
	waitFor(t, 90*time.Second, "WordCount to reach RUNNING", func() bool {
		select {
		case <-p.done:
			t.Fatalf("WordCount exited\n%s", tail(p.out.String(), 8000))
		default:
		}
		return p.state() == "RUNNING"
	})
}

// wordCountLine is input line i: four words of a 40-word vocabulary, in an
// order that spreads every word over all input partitions.
func wordCountLine(i int) []string {
	words := make([]string, 4)
	for j := range words {
		words[j] = fmt.Sprintf("w%02d", (i*7+j*13)%40)
	}
	return words
}

func TestJavaStreamsWordCountExactlyOnce(t *testing.T) {
	ensureJava(t)
	recordCap(t, javaClientName, javaKafkaVersion, capTxn)
	b := startBroker(t, t.TempDir(), matrixOverrides...)
	adm := newAdmin(t, b.Addr())
	const (
		in, out, appID = "wc-in", "wc-out", "wc-app"
		n              = 1500 // input lines, in three parts
	)
	createTopic(t, adm, in, 3, nil)
	createTopic(t, adm, out, 3, nil)
	want := map[string]int64{}
	produce := func(from, to int) {
		cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(in), kgo.ProducerLinger(0))
		defer cl.Close()
		for i := from; i < to; i += 25 {
			var rs []*kgo.Record
			for j := i; j < min(i+25, to); j++ {
				words := wordCountLine(j)
				for _, w := range words {
					want[w]++
				}
				rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(j)), Value: []byte(strings.Join(words, " "))})
			}
			produceSync(t, cl, rs)
		}
	}
	// committed is how many input records the application committed.
	committed := func() int64 {
		offs, err := adm.FetchOffsets(testCtx(t), appID)
		if err != nil {
			return 0
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == in {
				sum += o.At
			}
		})
		return sum
	}
	stateDir := t.TempDir()
	start := time.Now()

	// Part 1; SIGKILL the Streams instance while it works through it.
	produce(0, n/3)
	s1 := startWordCount(t, b.Addr(), appID, in, out, stateDir)
	s1.waitRunning(t)
	waitFor(t, 90*time.Second, "WordCount to commit part of the input", func() bool { return committed() >= 100 })
	s1.kill()
	t.Logf("Streams instance killed with %d input records committed, after %v", committed(), time.Since(start).Round(time.Millisecond))

	// Part 2 with a new instance; SIGKILL the broker while it works.
	s2 := startWordCount(t, b.Addr(), appID, in, out, stateDir)
	produce(n/3, 2*n/3)
	s2.waitRunning(t)
	waitFor(t, 90*time.Second, "WordCount to commit past part 1", func() bool { return committed() > int64(n/3) })
	b.KillAndRestart()
	t.Logf("broker killed and restarted with %d input records committed", committed())

	// Part 3.
	produce(2*n/3, n)
	waitFor(t, 180*time.Second, "WordCount to commit all the input", func() bool { return committed() == int64(n) })
	t.Logf("all %d input lines committed after %v", n, time.Since(start).Round(time.Millisecond))

	// The output, read_committed: each word's counts are 1..N in order.
	var total int64
	for _, c := range want {
		total += c
	}
	got := map[string][]int64{}
	cl := newKgo(t, b.Addr(), kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer cl.Close()
	var read int64
	ctx, cancel := context.WithTimeout(testCtx(t), 60*time.Second)
	defer cancel()
	for read < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetching %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != 8 {
				t.Fatalf("output %q at %d/%d: value of %d bytes, want a long", r.Key, r.Partition, r.Offset, len(r.Value))
			}
			got[string(r.Key)] = append(got[string(r.Key)], int64(binary.BigEndian.Uint64(r.Value)))
			read++
		})
	}
	for w, n := range want {
		seq := got[w]
		for i, c := range seq {
			if c != int64(i+1) {
				t.Fatalf("word %s: output counts %v: count %d at position %d, want %d (a lost or repeated update)", w, seq, c, i, i+1)
			}
		}
		if int64(len(seq)) != n {
			t.Fatalf("word %s: %d updates in the output, want %d (counts %v)", w, len(seq), n, seq)
		}
	}
	if read != total || len(got) != len(want) {
		t.Fatalf("read %d output records for %d words, want %d for %d", read, len(got), total, len(want))
	}
	// Nothing beyond: a short poll finds no further record.
	ctx2, cancel2 := context.WithTimeout(testCtx(t), 2*time.Second)
	defer cancel2()
	if fs := cl.PollFetches(ctx2); fs.NumRecords() > 0 {
		t.Fatalf("%d output records beyond the %d expected", fs.NumRecords(), total)
	}
	t.Logf("output exactly right: %d counts for %d words", total, len(want))
	b.Alive()
}
