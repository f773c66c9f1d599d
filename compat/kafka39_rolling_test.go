package compat

// The rolling migration of issue 24: a three-broker Apache Kafka 3.9
// cluster (ZooKeeper mode) becomes a kbroker cluster one broker at a time,
// each kbroker on the stopped Kafka broker's broker.id, ZooKeeper chroot
// and log dir, under producers that never stop; then, after a kill -9,
// the whole cluster goes back to Kafka the same way.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/integration"
)

// rollingTopic has one partition led (preferred) by each broker.
const (
	rollingTopic      = "rolling"
	rollingPartitions = 3
	offsetsTopic      = "__consumer_offsets"
)

// rollingAssignment is the replica list of each partition of rollingTopic:
// partition p prefers broker p+1, so every broker leads one.
var rollingAssignment = [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}

// rollingKafkaProps are the settings of the Kafka brokers of the test on
// top of startKafka39With's: the internal topics replicated on all three
// brokers, with kbroker's test partition counts (both kinds must hash
// groups onto the same partitions), quick follower fetches, and leaders
// moved only by the test's preferred elections.
var rollingKafkaProps = map[string]string{
	"offsets.topic.replication.factor":         "3",
	"offsets.topic.num.partitions":             "3",
	"transaction.state.log.num.partitions":     "3",
	"transaction.state.log.replication.factor": "3",
	"replica.fetch.wait.max.ms":                "100",
	"replica.lag.time.max.ms":                  "10000",
	"auto.leader.rebalance.enable":             "false",
}

// rollingKbrokerProps are the same settings for a kbroker on log dir dir.
func rollingKbrokerProps(dir string) map[string]string {
	props := map[string]string{"log.dirs": dir}
	for k, v := range rollingKafkaProps {
		props[k] = v
	}
	return props
}

// rollingBroker is one broker id of the cluster, Kafka or kbroker, with the
// log dir every incarnation of that id uses. Exactly one of kf and kb is
// set while it runs.
type rollingBroker struct {
	id  int32
	dir string
	kf  *kafka39Proc
	kb  *integration.BrokerProc
}

// Addr is the running incarnation's client address.
func (b *rollingBroker) Addr() string {
	if b.kb != nil {
		return b.kb.Addr()
	}
	return b.kf.Addr()
}

// kind names the running incarnation.
func (b *rollingBroker) kind() string {
	if b.kb != nil {
		return "kbroker"
	}
	return "Kafka"
}

// ack is one record the producer had acknowledged: its partition, offset
// and value ("<partition>-<sequence>").
type ack struct {
	partition int32
	offset    int64
	value     string
}

// rollingProducer produces to rollingTopic with acks=all (idempotent)
// until stopped, round robin over the partitions, each record's value its
// partition and its sequence within that partition, and records every
// acknowledgement.
type rollingProducer struct {
	partitions int32
	cl         *kgo.Client
	log        *syncBuffer
	cancel     context.CancelFunc
	done       chan struct{}

	mu   sync.Mutex
	acks []ack
	errs []error
}

// startRollingProducer starts the producer of rollingTopic seeded with
// seeds; it is stopped at test cleanup if the test did not stop it.
func startRollingProducer(t *testing.T, seeds []string) *rollingProducer {
	t.Helper()
	return startAckedProducer(t, seeds, rollingTopic, rollingPartitions)
}

// startAckedProducer is startRollingProducer on partitions 0 to
// partitions-1 of topic.
func startAckedProducer(t *testing.T, seeds []string, topic string, partitions int32) *rollingProducer {
	t.Helper()
	p := &rollingProducer{partitions: partitions, log: &syncBuffer{}, done: make(chan struct{})}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.StopProducerOnDataLossDetected(), kgo.MaxBufferedRecords(500),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.WithLogger(kgo.BasicLogger(p.log, kgo.LogLevelInfo, func() string { return time.Now().UTC().Format("15:04:05.000 ") })))
	if err != nil {
		t.Fatal(err)
	}
	p.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.run(ctx)
	t.Cleanup(func() {
		p.cancel()
		p.cl.Close() // fails what is still buffered: run cannot stay blocked
		<-p.done
		if t.Failed() {
			t.Logf("--- producer log (last 6000 bytes) ---\n%s", tail(p.log.String(), 6000))
		}
	})
	keepRollingOutput(t, "producer", p.log.String) // runs before the cleanup above
	return p
}

// run produces one record every 2 ms until ctx ends.
func (p *rollingProducer) run(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		part := int32(seq) % p.partitions
		r := &kgo.Record{Partition: part, Value: []byte(fmt.Sprintf("%d-%d", part, int32(seq)/p.partitions))}
		// ctx: a producer blocked on a full buffer stops with the test.
		p.cl.Produce(ctx, r, p.record)
	}
}

// record is the produce callback.
func (p *rollingProducer) record(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		return // not acknowledged, cancelled by stop before it was sent
	}
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s: %w", r.Value, err))
		return
	}
	p.acks = append(p.acks, ack{r.Partition, r.Offset, string(r.Value)})
}

// acked is the number of acknowledged records so far.
func (p *rollingProducer) acked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks)
}

// waitProgress waits until n more records are acknowledged: the producer
// goes on in the cluster as it is now.
func (p *rollingProducer) waitProgress(t *testing.T, what string, n int) {
	t.Helper()
	from := p.acked()
	waitFor(t, kafkaStartTimeout, fmt.Sprintf("%d more acknowledged records %s", n, what), func() bool {
		return p.acked() >= from+n
	})
}

// stop ends production, waits for every buffered record's outcome and
// returns the acknowledgements; any failed record fails the test.
func (p *rollingProducer) stop(t *testing.T) []ack {
	t.Helper()
	p.cancel()
	<-p.done
	if err := p.cl.Flush(testCtx(t)); err != nil {
		t.Fatalf("flushing the producer: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(p.errs), p.errs[0])
	}
	return slices.Clone(p.acks)
}

// TestKafka39RollingMigration: a rolling migration of a three-broker Kafka
// 3.9 cluster to kbroker and back, under load. Kafka brokers
// 1, 2 and 3 (each its own log dir) hold a topic with RF 3 and
// min.insync.replicas=2 whose three partitions prefer one broker each. All
// along, an idempotent acks=all producer writes to it; a transactional
// producer commits and aborts transactions on a topic like it
// (kafka39_rolling_txn_test.go); a group of members that come and go
// consumes the first topic and commits (kafka39_rolling_group_test.go).
// Another group (on a __consumer_offsets partition broker 2 leads) commits
// offsets on Kafka before the roll and on kbroker after it. Each Kafka
// broker in turn (1 first, the first to register and so most likely the
// first controller) stops with SIGTERM (a controlled shutdown) and a
// kbroker takes its broker.id, chroot and log dir; once that kbroker is in
// the ISR of every partition (the topics' and __consumer_offsets'), a
// preferred election gives it back its leaderships and the producers must
// go on. kbroker 3 is then killed with SIGKILL and restarted on its dir.
// Then brokers 2, 1 and 3 go back to Kafka 3.9 on their dirs the same way.
// At the end every acknowledged record is in the log exactly once, at its
// acknowledged offset, in sequence order without gaps; read_committed
// shows every committed transaction whole and no aborted one; the members'
// group never moved a commit back nor restarted below it; and the other
// group's last commit, made on kbroker, is what every broker answers with
// Kafka coordinating the group again. Every wait for the cluster also
// wants each broker's Metadata to be what ZooKeeper holds.
func TestKafka39RollingMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, three Apache Kafka 3.9 brokers and three kbroker brokers")
	}
	const chroot = "/rolling"
	integration.BuildKbroker(t) // not within the first move's time
	start := time.Now()
	z := integration.StartZooKeeper(t)
	zkc := dialRollingZK(t, z, chroot)
	brokers := make([]*rollingBroker, 3)
	var seeds []string
	for i := range brokers {
		b := &rollingBroker{id: int32(i + 1), dir: filepath.Join(t.TempDir(), "data")}
		b.kf = startRollingKafka(t, z, chroot, b)
		brokers[i], seeds = b, append(seeds, b.Addr())
	}
	waitRollingCluster(t, zkc, brokers, "three Kafka brokers registered", false)
	createAssigned(t, seeds[0], rollingTopic, map[string]string{"min.insync.replicas": "2"}, rollingAssignment...)
	createAssigned(t, seeds[0], rollingTxnTopic, map[string]string{"min.insync.replicas": "2"}, rollingAssignment...)
	grp := rollingGroupOn(t, zkc, seeds[0], 2)
	t.Logf("group %s, on a partition of %s that broker 2 leads", grp, offsetsTopic)
	committed := commitRollingOffsets(t, seeds[0], grp, 10, "on Kafka")
	waitRollingCluster(t, zkc, brokers, "the Kafka cluster in full ISR", true)
	t.Logf("Kafka cluster ready after %v", time.Since(start).Round(time.Millisecond))

	// Clients made during the roll (the writer's after an error, every
	// new group member) are seeded with where the brokers are then: each
	// incarnation listens on a new port, and a client seeded with the
	// first addresses could not bootstrap once all three have moved.
	live := &liveSeeds{}
	live.set(brokers)
	prod := startRollingProducer(t, seeds)
	txw := startRollingTxnWriter(t, live.get)
	members := startRollingGroup(t, live.get)
	prod.waitProgress(t, "on the Kafka cluster", 200)
	txw.waitProgress(t, "on the Kafka cluster", 10)
	for _, b := range brokers {
		replaceWithKbroker(t, z, zkc, chroot, brokers, b)
		live.set(brokers)
		prod.waitProgress(t, fmt.Sprintf("after kbroker took broker %d", b.id), 200)
		txw.waitProgress(t, fmt.Sprintf("after kbroker took broker %d", b.id), 10)
	}
	// A crash mid-roll: kill -9 of kbroker 3 (a leader), restarted on its
	// log dir.
	killAndRestartKbroker(t, zkc, brokers, brokers[2])
	live.set(brokers)
	prod.waitProgress(t, "after kbroker 3's kill -9 and restart", 200)
	txw.waitProgress(t, "after kbroker 3's kill -9 and restart", 10)
	// kbroker 2 coordinates the group now, from what Kafka 2 wrote; its
	// own commit must survive the way back.
	checkRollingOffsets(t, brokers[1].Addr(), grp, committed)
	committed = commitRollingOffsets(t, brokers[1].Addr(), grp, 100, "on kbroker")
	for _, b := range []*rollingBroker{brokers[1], brokers[0], brokers[2]} {
		replaceWithKafka(t, z, zkc, chroot, brokers, b)
		live.set(brokers)
		prod.waitProgress(t, fmt.Sprintf("after Kafka took broker %d back", b.id), 200)
		txw.waitProgress(t, fmt.Sprintf("after Kafka took broker %d back", b.id), 10)
	}

	txw.stop(t, brokers[0].Addr())
	acks := prod.stop(t)
	t.Logf("%d records acknowledged during the roll", len(acks))
	members.stop(t, brokers[0].Addr(), acks)
	checkRollingLog(t, brokers[0].Addr(), acks)
	for _, b := range brokers {
		checkRollingOffsets(t, b.Addr(), grp, committed)
	}
	t.Logf("rolling migration checked in %v", time.Since(start).Round(time.Millisecond))
}

// liveSeeds is the address of every broker id's current incarnation.
type liveSeeds struct {
	mu    sync.Mutex
	addrs []string
}

// set takes the addresses of brokers; only the test's goroutine, which
// starts and stops the incarnations, calls it.
func (s *liveSeeds) set(brokers []*rollingBroker) {
	addrs := make([]string, len(brokers))
	for i, b := range brokers {
		addrs[i] = b.Addr()
	}
	s.mu.Lock()
	s.addrs = addrs
	s.mu.Unlock()
}

// get is the addresses last set.
func (s *liveSeeds) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs
}

// replaceWithKbroker stops b's Kafka broker with SIGTERM, which must end
// in a clean shutdown, starts a kbroker on its id, chroot and log dir, and
// waits until the cluster is whole again with every leader preferred.
func replaceWithKbroker(t *testing.T, z *integration.ZooKeeper, zkc *zkclient.Client, chroot string, brokers []*rollingBroker, b *rollingBroker) {
	t.Helper()
	start := time.Now()
	b.kf.stop(t)
	out := b.kf.out.String()
	if !strings.Contains(out, fmt.Sprintf("[KafkaServer id=%d] shut down completed", b.id)) {
		t.Fatalf("Kafka broker %d did not shut down cleanly:\n%s", b.id, tail(out, 4000))
	}
	// Kafka falls back to this when the controller, of either kind, never
	// answered its ControlledShutdown with every leadership moved.
	if strings.Contains(out, "Proceeding to do an unclean shutdown") {
		t.Fatalf("Kafka broker %d's controlled shutdown failed:\n%s", b.id, grepLines(out, "ontrolled shutdown"))
	}
	b.kf = nil
	stopped := time.Since(start)
	b.kb = startKbrokerID(t, z, chroot, b.id, rollingKbrokerProps(b.dir))
	keepRollingOutput(t, fmt.Sprintf("kbroker-%d", b.id), b.kb.Log)
	rejoin(t, zkc, brokers, b, start, stopped)
	checkOpenedCleanly(t, fmt.Sprintf("kbroker %d", b.id), b.kb.Log(), kbrokerDirTrouble)
}

// killAndRestartKbroker kills b's kbroker with SIGKILL and starts it again
// on its log dir, then waits until the cluster is whole again with every
// leader preferred.
func killAndRestartKbroker(t *testing.T, zkc *zkclient.Client, brokers []*rollingBroker, b *rollingBroker) {
	t.Helper()
	start := time.Now()
	b.kb.Kill()
	stopped := time.Since(start)
	b.kb.Restart()
	rejoin(t, zkc, brokers, b, start, stopped)
}

// replaceWithKafka is replaceWithKbroker the way back: b's kbroker stops
// with SIGTERM and Kafka 3.9 starts on its log dir.
func replaceWithKafka(t *testing.T, z *integration.ZooKeeper, zkc *zkclient.Client, chroot string, brokers []*rollingBroker, b *rollingBroker) {
	t.Helper()
	start := time.Now()
	if err := b.kb.Term(60 * time.Second); err != nil {
		t.Fatalf("kbroker %d did not stop cleanly: %v\n%s", b.id, err, tail(b.kb.Log(), 4000))
	}
	if !strings.Contains(b.kb.Log(), "controlled shutdown complete") {
		t.Fatalf("kbroker %d stopped without a controlled shutdown:\n%s", b.id, tail(b.kb.Log(), 4000))
	}
	b.kb = nil
	stopped := time.Since(start)
	b.kf = startRollingKafka(t, z, chroot, b)
	rejoin(t, zkc, brokers, b, start, stopped)
	checkOpenedCleanly(t, fmt.Sprintf("Kafka broker %d", b.id), b.kf.out.String(), kafkaDirTrouble)
}

// rejoin waits until the restarted b is in every ISR, moves the leaders
// back to the preferred replicas and waits until every broker sees that.
// start is when the old incarnation was told to stop, stopped how long
// that took.
func rejoin(t *testing.T, zkc *zkclient.Client, brokers []*rollingBroker, b *rollingBroker, start time.Time, stopped time.Duration) {
	t.Helper()
	serving := time.Since(start)
	waitRollingCluster(t, zkc, brokers, fmt.Sprintf("%s broker %d in every ISR", b.kind(), b.id), false)
	inISR := time.Since(start)
	electPreferred(t, b.Addr())
	waitRollingCluster(t, zkc, brokers, fmt.Sprintf("the preferred leaders with %s broker %d", b.kind(), b.id), true)
	v, err := zkRollingView(zkc)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("broker %d is %s, back in every ISR and leading its partitions after %v (old one stopped %v, new one serving %v, in every ISR %v); every broker's Metadata and ZooKeeper: %s",
		b.id, b.kind(), ms(time.Since(start)), ms(stopped), ms(serving), ms(inISR), v)
}

// electPreferred runs a preferred leader election of every partition
// through the broker at addr (forwarded to the controller, of either
// kind); ELECTION_NOT_NEEDED is success. As an operator would rerun
// kafka-leader-election, an attempt that gets no answer in 15 s, or finds
// a preferred leader not available yet (a broker just restarted after a
// kill -9 is in the ISR before its new registration reached the
// controller), is retried; each retry is logged.
func electPreferred(t *testing.T, addr string) {
	t.Helper()
	adm := newAdmin(t, addr)
	waitFor(t, kafkaStartTimeout, "a preferred leader election of every partition", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kerr.NotController) {
				t.Logf("preferred election: %v; again", err)
				return false
			}
			t.Fatalf("ElectLeaders: %v", err)
		}
		for topic, ps := range res {
			for p, r := range ps {
				switch {
				case r.Err == nil || errors.Is(r.Err, kerr.ElectionNotNeeded):
				case errors.Is(r.Err, kerr.PreferredLeaderNotAvailable):
					t.Logf("preferred election: %s-%d: %v (%s); again", topic, p, r.Err, r.ErrMessage)
					return false
				default:
					t.Fatalf("preferred election of %s-%d: %v (%s)", topic, p, r.Err, r.ErrMessage)
				}
			}
		}
		return true
	})
}

// rollingGroupOn returns a group name whose __consumer_offsets partition
// prefers broker leader. The offsets topic does not exist before the first
// FindCoordinator (Kafka creates it then, through the broker at addr, on a
// replica assignment with a random start), so the name is picked from its
// assignment in ZooKeeper.
func rollingGroupOn(t *testing.T, zkc *zkclient.Client, addr string, leader int32) string {
	t.Helper()
	var a zkdata.TopicAssignment
	var err error
	adm := newAdmin(t, addr)
	waitFor(t, kafkaStartTimeout, "the offsets topic", func() bool {
		adm.FindGroupCoordinators(testCtx(t), "rolling-group")
		a, _, err = zkc.TopicAssignment(offsetsTopic)
		return err == nil
	})
	if n := len(a.Partitions); n != rollingPartitions {
		t.Fatalf("%s has %d partitions, want %d", offsetsTopic, n, rollingPartitions)
	}
	for i := range 1000 {
		grp := fmt.Sprintf("rolling-group-%d", i)
		if r := a.Partitions[group.PartitionFor(grp, rollingPartitions)]; len(r) > 0 && r[0] == leader {
			return grp
		}
	}
	t.Fatalf("no group name on a partition of %s that broker %d leads: %v", offsetsTopic, leader, a.Partitions)
	return ""
}

// commitRollingOffsets commits offset base+p with metadata meta for
// every partition p of rollingTopic as group grp, through the broker at
// addr (the client finds the group's coordinator), and returns them.
func commitRollingOffsets(t *testing.T, addr, grp string, base int64, meta string) kadm.Offsets {
	t.Helper()
	offs := kadm.Offsets{}
	for p := range int32(rollingPartitions) {
		offs.Add(kadm.Offset{Topic: rollingTopic, Partition: p, At: base + int64(p), LeaderEpoch: -1, Metadata: meta})
	}
	adm := newAdmin(t, addr)
	var err error
	waitFor(t, kafkaStartTimeout, "the group's commit", func() bool {
		var resp kadm.OffsetResponses
		resp, err = adm.CommitOffsets(testCtx(t), grp, offs)
		if err == nil {
			err = resp.Error()
		}
		return err == nil
	})
	return offs
}

// checkRollingOffsets checks that the broker at addr answers OffsetFetch
// of group grp with want.
func checkRollingOffsets(t *testing.T, addr, grp string, want kadm.Offsets) {
	t.Helper()
	adm := newAdmin(t, addr)
	var got kadm.OffsetResponses
	var err error
	waitFor(t, opTimeout, "the group's offsets through "+addr, func() bool {
		got, err = adm.FetchOffsets(testCtx(t), grp)
		if err == nil {
			err = got.Error()
		}
		return err == nil
	})
	want.Each(func(o kadm.Offset) {
		g, ok := got.Lookup(o.Topic, o.Partition)
		if !ok || g.At != o.At || g.Metadata != o.Metadata {
			t.Errorf("%s: committed offset of %s-%d: %+v (found %v), want %d %q", addr, o.Topic, o.Partition, g.Offset, ok, o.At, o.Metadata)
		}
	})
}

// checkRollingLog reads every partition of rollingTopic from the start to
// its end through the broker at addr and checks the acknowledgements
// against it: per partition the acknowledged sequences are 0, 1, 2, … in
// offset order (no gap, no reorder), each acknowledged value is at its
// acknowledged offset, and no value is in the log twice.
func checkRollingLog(t *testing.T, addr string, acks []ack) {
	t.Helper()
	logs := readRollingLog(t, addr)
	byPart := make([][]ack, rollingPartitions)
	for _, a := range acks {
		byPart[a.partition] = append(byPart[a.partition], a)
	}
	for p, as := range byPart {
		slices.SortFunc(as, func(a, b ack) int { return int(a.offset - b.offset) })
		seen := map[string]int64{}
		for off, v := range logs[p] {
			if prev, dup := seen[v]; dup {
				t.Errorf("partition %d: %q at offsets %d and %d", p, v, prev, off)
			}
			seen[v] = off
		}
		for i, a := range as {
			if want := fmt.Sprintf("%d-%d", p, i); a.value != want {
				t.Fatalf("partition %d: acknowledged record %d (offset %d) is %q, want %q: a gap or a reorder", p, i, a.offset, a.value, want)
			}
			if got, ok := logs[p][a.offset]; !ok || got != a.value {
				t.Errorf("partition %d offset %d: acknowledged %q, log has %q (present %v)", p, a.offset, a.value, got, ok)
			}
		}
		t.Logf("partition %d: %d acknowledged records, %d in the log", p, len(as), len(logs[p]))
	}
}

// readRollingLog reads every partition of rollingTopic from the start to
// its end offset and returns each partition's values by offset.
func readRollingLog(t *testing.T, addr string) []map[int64]string {
	t.Helper()
	ends, err := newAdmin(t, addr).ListEndOffsets(testCtx(t), rollingTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", rollingTopic, err)
	}
	offs := map[int32]kgo.Offset{}
	for p := range int32(rollingPartitions) {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{rollingTopic: offs}))
	defer cl.Close()
	logs := make([]map[int64]string, rollingPartitions)
	for p := range logs {
		logs[p] = map[int64]string{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := func() bool {
		for p := range int32(rollingPartitions) {
			end, _ := ends.Lookup(rollingTopic, p)
			if int64(len(logs[p])) < end.Offset {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { logs[r.Partition][r.Offset] = string(r.Value) })
	}
	if !done() {
		t.Fatalf("reading %s through %s: got %v records per partition, ends %v", rollingTopic, addr, lens(logs), ends)
	}
	return logs
}

func lens(logs []map[int64]string) []int {
	var n []int
	for _, l := range logs {
		n = append(n, len(l))
	}
	return n
}
