package replica

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newTestManager is a Manager over a fresh log dir, its output in the
// returned buffer; its storage is closed when the test ends.
func newTestManager(t *testing.T) (*Manager, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	cfg, _, err := config.ParseConfig(map[string]string{"log.dirs": dir})
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(out, nil))
	cfg.Now = time.Now
	m := NewManager(cfg, make(chan struct{}))
	if err := m.OpenDirs(nil); err != nil {
		t.Fatal(err)
	}
	store, err := controller.OpenFileStore(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Load(store); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Stop()
		if err := m.CloseStorage(); err != nil {
			t.Error(err)
		}
		store.Close()
	})
	return m, out
}

// abortTxn appends one transactional batch of producer pid and its abort marker.
func abortTxn(t *testing.T, p *Partition, pid int64) {
	t.Helper()
	ms := time.Now().UnixMilli()
	batch, err := records.Build(records.BatchSpec{Attributes: 0x10, FirstTimestamp: ms, ProducerID: pid, BaseSequence: 0},
		[]records.Record{{Value: []byte("doomed")}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := records.ParseHeader(batch)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := p.append(batch, h); err != nil || res.Err != nil {
		t.Fatalf("append: %v %v", err, res.Err)
	}
	if _, err := p.appendMarker(pid, 0, records.ControlAbort, 0, ms); err != nil {
		t.Fatal(err)
	}
}

func abortedCount(p *Partition) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.txns.aborted)
}

// TestAbortedListFollowsLogStart: the aborted-transaction list of a
// partition loses the transactions that DeleteRecords and retention move
// the log start past, and keeps those still readable.
func TestAbortedListFollowsLogStart(t *testing.T) {
	m, _ := newTestManager(t)
	top, kerrv, msg := m.CreateTopic("t", 1, 1, nil, false)
	if kerrv != nil {
		t.Fatal(kerrv, msg)
	}
	p := top.Partitions[0]
	for pid := int64(1); pid <= 3; pid++ {
		abortTxn(t, p, pid) // offsets 2(pid-1), marker 2(pid-1)+1
	}
	if n := abortedCount(p); n != 3 {
		t.Fatalf("%d aborted transactions, want 3", n)
	}
	// DeleteRecords up to offset 4: the first two are unreachable; the
	// third (data at 4) stays.
	if err := p.SetLogStartOffset(4); err != nil {
		t.Fatal(err)
	}
	if n := abortedCount(p); n != 1 {
		t.Fatalf("%d aborted transactions after DeleteRecords to 4, want 1", n)
	}
	if got := p.AbortedBetween(4, p.HighWatermark()); len(got) != 1 || got[0].ProducerID != 3 {
		t.Fatalf("aborted in range after DeleteRecords: %+v", got)
	}

	// Retention deletes the closed segment holding everything so far.
	abortTxn(t, p, 4)
	if err := p.Log.Roll(); err != nil {
		t.Fatal(err)
	}
	if kerrv, msg := m.AlterTopicConfigs("t", false, func(map[string]string) (map[string]string, *kerr.Error, string) {
		return map[string]string{"retention.ms": "1"}, nil, ""
	}); kerrv != nil {
		t.Fatal(kerrv, msg)
	}
	m.now = func() time.Time { return time.Now().Add(time.Hour) } // every segment is older than retention.ms
	if n := m.runRetention(); n == 0 {
		t.Fatal("retention deleted nothing")
	}
	if ls := p.Log.LogStartOffset(); ls != 8 {
		t.Fatalf("log start %d after retention, want 8", ls)
	}
	if n := abortedCount(p); n != 0 {
		t.Fatalf("%d aborted transactions below the log start after retention, want 0", n)
	}
}

// TestLogTaskPanicRecovered: a panic in one partition's share of a
// background pass is recovered and logged with the partition, the pass goes
// on to the other partitions, and the task keeps running.
func TestLogTaskPanicRecovered(t *testing.T) {
	m, out := newTestManager(t)
	top, kerrv, msg := m.CreateTopic("t", 2, 1, nil, false)
	if kerrv != nil {
		t.Fatal(kerrv, msg)
	}
	var visited []int32
	for _, p := range top.Partitions {
		m.guard("retention", p, func() {
			if p.Index == 0 {
				panic("bad log")
			}
			visited = append(visited, p.Index)
		})
	}
	if len(visited) != 1 || visited[0] != 1 {
		t.Fatalf("partitions after the panic: %v", visited)
	}
	if n := m.TaskPanics(); n != 1 {
		t.Fatalf("%d panics counted, want 1", n)
	}
	if s := out.String(); !strings.Contains(s, "panic in a background log task") || !strings.Contains(s, "bad log") || !strings.Contains(s, "topic=t partition=0") {
		t.Fatalf("log: %s", s)
	}

	// The loop survives a panicking pass and runs the next one.
	m.tasks.stop = make(chan struct{})
	second := make(chan struct{})
	calls := 0
	m.tasks.wg.Add(1)
	go m.loop("test", time.Millisecond, func() {
		if calls++; calls == 1 {
			panic("first pass")
		}
		if calls == 2 {
			close(second)
		}
	})
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("no pass after the panicking one")
	}
	m.stopLogTasks()
	if n := m.TaskPanics(); n != 2 {
		t.Fatalf("%d panics counted, want 2", n)
	}
}
