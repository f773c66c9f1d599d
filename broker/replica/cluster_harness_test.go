package replica

// A cluster of Managers in one test process: each on its own temp dirs,
// each serving Fetch and OffsetForLeaderEpoch to the others over real TCP on
// 127.0.0.1 (a minimal Kafka-framed server), an in-memory ISRWriter with
// version checks, and a fake controller that elects leaders with bumped
// leader epochs and sends MakeLeader / MakeFollower.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCluster is the brokers and the controller's view of partition states.
type testCluster struct {
	t      testing.TB
	topic  controller.Topic
	rc     ReplicationConfig
	manual bool
	minISR string
	// zk starts the brokers with zookeeper.connect set, as brokers of a
	// ZooKeeper cluster are (nothing dials it here): a missing log is then
	// created only for a replica a LeaderAndIsr gives.
	zk bool

	mu      sync.Mutex
	states  map[storage.TopicPartition]PartitionState
	brokers map[int32]*testBroker
	// isrLog records every ISR written by a leader.
	isrLog [][]int32
	// lostAnswers is how many of the next ISR writes are made but answered
	// with an error, as a ZooKeeper write whose answer the connection lost.
	lostAnswers int
}

func newTestCluster(t testing.TB, n int, rc ReplicationConfig, manual bool, minISR int) *testCluster {
	return newTestClusterParts(t, n, 1, rc, manual, minISR)
}

// newTestClusterParts is newTestCluster with a topic of partitions
// partitions (none elected yet).
func newTestClusterParts(t testing.TB, n int, partitions int32, rc ReplicationConfig, manual bool, minISR int) *testCluster {
	c := &testCluster{
		t:      t,
		topic:  controller.Topic{Name: "t", ID: controller.NewTopicID(), Partitions: partitions, ReplicationFactor: int16(n)},
		rc:     rc,
		manual: manual,
		minISR: strconv.Itoa(minISR),
		states: map[storage.TopicPartition]PartitionState{}, brokers: map[int32]*testBroker{},
	}
	for id := int32(1); id <= int32(n); id++ {
		c.brokers[id] = c.start(id, t.TempDir())
	}
	return c
}

// ChangeISR implements ISRWriter with a version check.
func (c *testCluster) ChangeISR(topic string, partition int32, cur PartitionState, isr []int32) (PartitionState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	st := c.states[tp]
	if st.ZKVersion != cur.ZKVersion {
		return st.Clone(), fmt.Errorf("version %d, stored %d: %w", cur.ZKVersion, st.ZKVersion, ErrStaleISRVersion)
	}
	st.ISR = slices.Clone(isr)
	st.ZKVersion++
	c.states[tp] = st
	c.isrLog = append(c.isrLog, slices.Clone(isr))
	if c.lostAnswers > 0 {
		c.lostAnswers--
		return cur, errors.New("connection lost before the answer")
	}
	return st.Clone(), nil
}

func (c *testCluster) addr(id int32) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.brokers[id]
	if b == nil || b.ln == nil {
		return "", false
	}
	return b.ln.Addr().String(), true
}

func (c *testCluster) state(p int32) PartitionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.states[storage.TopicPartition{Topic: c.topic.Name, Partition: p}].Clone()
}

// elect makes leader the leader of partition p with a new leader epoch and
// the given ISR and replicas, and tells the brokers in to (leader first).
func (c *testCluster) elect(p int32, leader int32, isr, replicas []int32, to ...int32) PartitionState {
	c.t.Helper()
	c.mu.Lock()
	tp := storage.TopicPartition{Topic: c.topic.Name, Partition: p}
	st := c.states[tp]
	st = PartitionState{Leader: leader, LeaderEpoch: st.LeaderEpoch + 1, ControllerEpoch: 1,
		ISR: slices.Clone(isr), Replicas: slices.Clone(replicas), ZKVersion: st.ZKVersion + 1}
	c.states[tp] = st
	c.mu.Unlock()
	slices.SortFunc(to, func(a, b int32) int {
		switch {
		case a == leader:
			return -1
		case b == leader:
			return 1
		}
		return int(a - b)
	})
	for _, id := range to {
		c.apply(id, p, st)
	}
	return st
}

// apply sends st to broker id.
func (c *testCluster) apply(id int32, p int32, st PartitionState) {
	c.t.Helper()
	b := c.broker(id)
	var err error
	if st.Leader == id {
		err = b.m.MakeLeader(c.topic.Name, p, c.topic.ID, st)
	} else {
		err = b.m.MakeFollower(c.topic.Name, p, c.topic.ID, st)
	}
	if err != nil {
		c.t.Fatalf("broker %d: applying %+v: %v", id, st, err)
	}
}

func (c *testCluster) broker(id int32) *testBroker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[id]
}

// testBroker is one Manager and its server.
type testBroker struct {
	id      int32
	dir     string
	m       *Manager
	closing chan struct{}
	ln      net.Listener
	wg      sync.WaitGroup
	connMu  sync.Mutex
	conns   map[net.Conn]bool
	stopped bool
	store   controller.Store
	// fetchEpochs is the ReplicaState.Epoch of the last Fetch v15+ from
	// each follower, under connMu.
	fetchEpochs map[int32]int64
	// offsetForEpochs counts the OffsetForLeaderEpoch requests served,
	// under connMu.
	offsetForEpochs int
}

// servedOffsetForEpochs is how many OffsetForLeaderEpoch requests b served.
func (b *testBroker) servedOffsetForEpochs() int {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	return b.offsetForEpochs
}

// harnessBrokerEpoch is the registration epoch broker id sends.
func harnessBrokerEpoch(id int32) int64 { return 1000 + int64(id) }

func (c *testCluster) start(id int32, dir string) *testBroker {
	c.t.Helper()
	props := map[string]string{
		"log.dirs": filepath.Join(dir, "data"), "broker.id": strconv.Itoa(int(id)), "min.insync.replicas": c.minISR,
	}
	if c.zk {
		props["zookeeper.connect"] = "127.0.0.1:1/unused"
	}
	cfg, _, err := config.ParseConfig(props)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{c.t, id}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg.Now = time.Now
	b := &testBroker{id: id, dir: dir, closing: make(chan struct{}), conns: map[net.Conn]bool{}}
	b.m = NewManager(cfg, b.closing)
	if err := b.m.OpenDirs(nil); err != nil {
		c.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "meta"), 0o755); err != nil {
		c.t.Fatal(err)
	}
	store, err := controller.OpenFileStore(filepath.Join(dir, "meta"), "cluster", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, ok := store.Topic(c.topic.Name); !ok {
		if err := store.CreateTopic(c.topic); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := b.m.Load(store); err != nil {
		c.t.Fatal(err)
	}
	b.store = store
	rc := c.rc
	rc.BrokerEpoch = func() int64 { return harnessBrokerEpoch(id) }
	b.m.SetReplicationConfig(rc)
	b.m.repl.manualFetch = c.manual
	b.m.SetCluster(id, c, c.addr)
	b.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	b.wg.Add(1)
	go b.serve()
	c.t.Cleanup(b.stop)
	return b
}

// restart stops broker id and starts it again on the same dirs.
func (c *testCluster) restart(id int32) *testBroker {
	c.t.Helper()
	b := c.broker(id)
	b.stop()
	nb := c.start(id, b.dir)
	c.mu.Lock()
	c.brokers[id] = nb
	c.mu.Unlock()
	return nb
}

// stop closes the server, the manager and its storage.
func (b *testBroker) stop() {
	b.connMu.Lock()
	if b.stopped {
		b.connMu.Unlock()
		return
	}
	b.stopped = true
	b.ln.Close()
	for c := range b.conns {
		c.Close()
	}
	b.connMu.Unlock()
	close(b.closing)
	b.m.Stop()
	b.wg.Wait()
	_ = b.m.CloseStorage()
	b.store.Close()
}

func (b *testBroker) serve() {
	defer b.wg.Done()
	for {
		conn, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.connMu.Lock()
		if b.stopped {
			b.connMu.Unlock()
			conn.Close()
			return
		}
		b.conns[conn] = true
		b.wg.Add(1)
		b.connMu.Unlock()
		go func() {
			defer b.wg.Done()
			defer conn.Close()
			b.serveConn(conn)
		}()
	}
}

// serveConn answers Fetch and OffsetForLeaderEpoch, one at a time.
func (b *testBroker) serveConn(conn net.Conn) {
	r := bufio.NewReader(conn)
	for {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		rd := kbin.Reader{Src: body}
		key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
		rd.NullableString()
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		req.SetVersion(version)
		if req.IsFlexible() {
			kmsg.SkipTags(&rd)
		}
		if err := req.ReadFrom(rd.Src); err != nil {
			return
		}
		var resp kmsg.Response
		switch req := req.(type) {
		case *kmsg.FetchRequest:
			if req.Version >= 15 {
				b.connMu.Lock()
				if b.fetchEpochs == nil {
					b.fetchEpochs = map[int32]int64{}
				}
				b.fetchEpochs[req.ReplicaState.ID] = req.ReplicaState.Epoch
				b.connMu.Unlock()
			}
			fr := req.ResponseKind().(*kmsg.FetchResponse)
			b.m.Fetch(req, fr)
			resp = fr
		case *kmsg.OffsetForLeaderEpochRequest:
			b.connMu.Lock()
			b.offsetForEpochs++
			b.connMu.Unlock()
			resp = b.m.OffsetForLeaderEpoch(req)
		default:
			return
		}
		out := binary.BigEndian.AppendUint32(nil, 0)
		out = binary.BigEndian.AppendUint32(out, uint32(corr))
		if resp.IsFlexible() {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

// testWriter sends a broker's log lines to t.Log.
type testWriter struct {
	t  testing.TB
	id int32
}

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("broker %d: %s", w.id, p)
	return len(p), nil
}

// part returns broker id's partition p.
func (c *testCluster) part(id, p int32) *Partition {
	return c.broker(id).m.PartitionOf(c.topic.Name, p)
}

// batch builds a batch of one record with value v.
func batch(t testing.TB, v string) ([]byte, records.Header) {
	t.Helper()
	return idempotentBatch(t, -1, 0, -1, v)
}

func idempotentBatch(t testing.TB, pid int64, epoch int16, seq int32, v string) ([]byte, records.Header) {
	t.Helper()
	b, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq},
		[]records.Record{{Value: []byte(v)}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := records.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, h
}

// produce appends v to broker id's partition p with acks and returns the result.
func (c *testCluster) produce(id, p int32, acks int16, v string, timeout time.Duration) AppendResult {
	c.t.Helper()
	b, h := batch(c.t, v)
	part := c.part(id, p)
	if kerrv := c.broker(id).m.CheckProduce(part, acks); kerrv != nil {
		return AppendResult{Err: kerrv}
	}
	return c.broker(id).m.Produce(part, b, h, acks, time.Now().Add(timeout))
}

// logBytes reads broker id's whole log of partition p.
func (c *testCluster) logBytes(id, p int32) []byte {
	c.t.Helper()
	part := c.part(id, p)
	data, err := part.Log.Read(part.Log.LogStartOffset(), 1<<30, part.Log.LogEndOffset(), true)
	if err != nil && !errors.Is(err, storage.ErrOffsetOutOfRange) {
		c.t.Fatal(err)
	}
	return data
}

// values decodes the record values of broker id's log of partition p.
func (c *testCluster) values(id, p int32) []string {
	c.t.Helper()
	data := c.logBytes(id, p)
	var out []string
	for len(data) > 0 {
		h, recs, err := records.DecodeRecords(data)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, r := range recs {
			out = append(out, string(r.Value))
		}
		data = data[h.TotalSize():]
	}
	return out
}

// waitFor polls cond (a condition on state the test does not own a signal
// for) until it holds or the deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// step runs broker id's fetcher of leader in manual mode: truncation rounds
// until no partition needs one, then one fetch.
func (c *testCluster) step(id, leader int32) { c.t.Helper(); c.stepTo(id, leader, true) }

// truncateOnly runs broker id's truncation rounds, without the fetch.
func (c *testCluster) truncateOnly(id, leader int32) { c.t.Helper(); c.stepTo(id, leader, false) }

// fetcherOf is broker id's fetcher from leader (the harness runs one per leader).
func (c *testCluster) fetcherOf(id, leader int32) *fetcher {
	c.t.Helper()
	b := c.broker(id)
	b.m.repl.mu.Lock()
	var f *fetcher
	for k, x := range b.m.repl.mu.fetchers {
		if k.leader == leader {
			f = x
		}
	}
	b.m.repl.mu.Unlock()
	if f == nil {
		c.t.Fatalf("broker %d has no fetcher for leader %d", id, leader)
	}
	return f
}

func (c *testCluster) stepTo(id, leader int32, fetch bool) {
	c.t.Helper()
	f := c.fetcherOf(id, leader)
	addr, _ := c.addr(leader)
	conn, err := kconn.Dial(f.ctx, addr, kconn.Options{ClientID: "test"})
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close()
	for i := 0; ; i++ {
		all := f.snapshot()
		trunc := truncating(all)
		if len(trunc) == 0 {
			if !fetch {
				return
			}
			for i := range all {
				all[i].wanted = true
			}
			if err := f.fetch(conn, all); err != nil {
				c.t.Fatal(err)
			}
			return
		}
		if i > 10 {
			c.t.Fatalf("broker %d still truncating after %d rounds", id, i)
		}
		if err := f.truncate(conn, trunc); err != nil {
			c.t.Fatal(err)
		}
	}
}
