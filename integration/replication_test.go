package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitReady waits for a restarted broker's /readyz: 200 only once it is
// back in the ISR of every partition it follows (what a rolling restart
// waits for).
func waitReady(t *testing.T, b *BrokerProc) {
	t.Helper()
	waitFor(t, 90*time.Second, fmt.Sprintf("broker %d's /readyz", b.ID), func() (bool, error) {
		code, body, err := b.Readyz()
		if err != nil {
			return false, err
		}
		return code == http.StatusOK, fmt.Errorf("%d %s", code, body)
	})
}

func addrsOf(bs []*BrokerProc) []string {
	var out []string
	for _, b := range bs {
		if b.Running() {
			out = append(out, b.Addr())
		}
	}
	return out
}

// producer is a continuous acks=all idempotent franz-go producer that
// records every acknowledgement in a history checker.
type producer struct {
	cl   *kgo.Client
	ch   *history.Checker
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs map[string]int
}

func startProducer(t *testing.T, bs []*BrokerProc, topic string, ch *history.Checker) *producer {
	return startProducerOpts(t, bs, topic, ch)
}

// startProducerOpts is startProducer with options added to (and
// overriding) its own.
func startProducerOpts(t *testing.T, bs []*BrokerProc, topic string, ch *history.Checker, opts ...kgo.Opt) *producer {
	return startProbedProducer(t, bs, topic, ch, nil, opts...)
}

// startProbedProducer is startProducerOpts whose records carry probe's
// send sequence (probe may be nil: none).
func startProbedProducer(t *testing.T, bs []*BrokerProc, topic string, ch *history.Checker, probe *consumeProbe, opts ...kgo.Opt) *producer {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrsOf(bs)...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RetryTimeout(2 * time.Minute), kgo.ProduceRequestTimeout(10 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	p := &producer{cl: cl, ch: ch, stop: make(chan struct{}), errs: map[string]int{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		sem := make(chan struct{}, 50)
		for {
			select {
			case <-p.stop:
				return
			case sem <- struct{}{}:
			}
			v := ch.Next("p")
			rec := &kgo.Record{Value: []byte(v)}
			if probe != nil {
				probe.stamp(rec)
			}
			cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
				<-sem
				if err != nil {
					p.mu.Lock()
					p.errs[err.Error()]++
					p.mu.Unlock()
					return
				}
				ch.Acked(history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, string(r.Value))
			})
		}
	}()
	return p
}

// waitAcked waits until n more records than before were acknowledged.
func (p *producer) waitAcked(t *testing.T, n int, what string) {
	t.Helper()
	from := p.ch.AckedCount()
	waitFor(t, 90*time.Second, what, func() (bool, error) {
		got := p.ch.AckedCount() - from
		return got >= n, fmt.Errorf("%d of %d acknowledged", got, n)
	})
}

// close stops producing and waits for every record in flight.
func (p *producer) close(t *testing.T) {
	close(p.stop)
	p.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Errorf("flushing the producer: %v", err)
	}
	p.cl.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) > 0 {
		t.Logf("produce errors (records not acknowledged): %v", p.errs)
	}
}

// readAll reads every partition of topic from the start to its end offset
// through the running brokers.
func readAll(t *testing.T, bs []*BrokerProc, topic string) []history.Record {
	t.Helper()
	return readAllOpts(t, bs, topic)
}

// readAllOpts is readAll with the consumer's options added; with
// kgo.KeepControlRecords it counts control records towards the end offset
// and leaves them out of what it returns.
func readAllOpts(t *testing.T, bs []*BrokerProc, topic string, opts ...kgo.Opt) []history.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var ends kadm.ListedOffsets
	waitFor(t, 60*time.Second, "end offsets", func() (bool, error) {
		ends, err = kadm.NewClient(admin).ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		return err == nil, err
	})
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			offsets[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrsOf(bs)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []history.Record
	next := map[int32]int64{}
	for done := 0; done < len(want); {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (read up to %v of %v)", topic, ctx.Err(), next, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= want[r.Partition] {
				return
			}
			if !r.Attrs.IsControl() {
				out = append(out, history.Record{TP: history.TP{Topic: topic, Partition: r.Partition}, Offset: r.Offset, Value: string(r.Value)})
			}
			if next[r.Partition] < want[r.Partition] && r.Offset+1 >= want[r.Partition] {
				done++
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	return out
}

// checkHistory reads the topic back and fails on any anomaly.
func checkHistory(t *testing.T, bs []*BrokerProc, topic string, ch *history.Checker, what string) {
	t.Helper()
	rep := ch.Check(readAll(t, bs, topic), true)
	if err := rep.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if rep.Acked == 0 {
		t.Fatalf("%s: nothing acknowledged", what)
	}
	t.Logf("%s: %d acknowledged, %d read, none lost, duplicated or reordered", what, rep.Acked, rep.Read)
}

// waitFullISR waits until every broker's cache has every partition of
// topic led and with all replicas in the ISR.
func waitFullISR(t *testing.T, bs []*BrokerProc, topic string, rf int) map[int32]int32 {
	t.Helper()
	leaders := map[int32]int32{}
	waitFor(t, 90*time.Second, "a full ISR in every cache", func() (bool, error) {
		for _, b := range bs {
			ps, err := partitionsOf(b.Addr(), topic)
			if err != nil {
				return false, err
			}
			for _, p := range ps {
				if p.Leader < 0 || len(p.ISR) != rf {
					return false, fmt.Errorf("broker %d: %+v", b.ID, p)
				}
				leaders[p.Partition] = p.Leader
			}
		}
		return true, nil
	})
	return leaders
}

// TestReplicatedProduceSurvivesLeaderLoss is the acks=all claim with real
// processes: three brokers, RF=3, min.insync.replicas=2, a continuous
// idempotent acks=all producer. The leader of partition 0 is SIGKILLed
// under load and restarted, another broker is bounced with SIGTERM
// (controlled shutdown); after each, every acknowledged record is read back
// exactly once and in order (history checker). With two of three brokers
// down, acks=all answers NOT_ENOUGH_REPLICAS while consumers still read
// everything acknowledged.
func TestReplicatedProduceSurvivesLeaderLoss(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3"})
	waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "hist", 3, 3, false)
	leaders := waitFullISR(t, bs, "hist", 3)

	ch := history.New()
	p := startProducer(t, bs, "hist", ch)
	p.waitAcked(t, 300, "records acknowledged before the kill")
	onlyLeaderAnswers(t, bs, "hist", leaders[0])

	victim := byID(bs, leaders[0])
	victim.Kill()
	t.Logf("SIGKILLed broker %d (leader of hist/0)", victim.ID)
	p.waitAcked(t, 300, "records acknowledged after the kill")
	victim.Restart()
	// /readyz turns 200 only once the restarted broker is back in the ISR
	// of every partition it follows (what a rolling restart waits for).
	waitReady(t, victim)
	ps, err := partitionsOf(victim.Addr(), "hist")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !slices.Contains(p.ISR, victim.ID) {
			t.Fatalf("broker %d said ready while outside the ISR of hist/%d: %+v", victim.ID, p.Partition, p)
		}
	}
	waitClusterFormed(t, bs, 3)
	waitFullISR(t, bs, "hist", 3)
	p.waitAcked(t, 100, "records acknowledged after the restart")

	leaders = waitFullISR(t, bs, "hist", 3)
	bounced := byID(bs, leaders[1])
	if err := bounced.Term(60 * time.Second); err != nil {
		t.Fatalf("SIGTERM broker %d: %v", bounced.ID, err)
	}
	t.Logf("SIGTERMed broker %d (leader of hist/1)", bounced.ID)
	p.waitAcked(t, 200, "records acknowledged during the bounce")
	bounced.Restart()
	waitClusterFormed(t, bs, 3)
	waitFullISR(t, bs, "hist", 3)
	p.close(t)
	checkHistory(t, bs, "hist", ch, "after a SIGKILL and a SIGTERM bounce")

	// Two of three down: acks=all refused, reads still served.
	var down []*BrokerProc
	for _, b := range bs[:2] {
		b.Kill()
		down = append(down, b)
	}
	survivor := bs[2]
	waitClusterFormed(t, []*BrokerProc{survivor}, 1)
	pr := kmsg.NewPtrProduceRequest()
	pr.Version, pr.Acks, pr.TimeoutMillis = 11, -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "hist"
	pp := kmsg.NewProduceRequestTopicPartition()
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	waitFor(t, 30*time.Second, "NOT_ENOUGH_REPLICAS with two brokers down", func() (bool, error) {
		r, err := send(survivor.Addr(), pr)
		if err != nil {
			return false, err
		}
		code := r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		return code == kerr.NotEnoughReplicas.Code, fmt.Errorf("error code %d", code)
	})
	checkHistory(t, []*BrokerProc{survivor}, "hist", ch, "with two of three brokers down")
}

// onlyLeaderAnswers checks that ListOffsets and DescribeProducers for
// topic's partition 0 are answered by its leader only: a follower (or a
// restarted replica with no role yet) says NOT_LEADER_OR_FOLLOWER, except
// to ListOffsets from the debugging replica id -2, as in Kafka.
func onlyLeaderAnswers(t *testing.T, bs []*BrokerProc, topic string, leader int32) {
	t.Helper()
	lo := func(replicaID int32) *kmsg.ListOffsetsRequest {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 7, replicaID
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dpt := kmsg.NewDescribeProducersRequestTopic()
	dpt.Topic, dpt.Partitions = topic, []int32{0}
	dp.Topics = append(dp.Topics, dpt)
	for _, b := range bs {
		want := int16(0)
		if b.ID != leader {
			want = kerr.NotLeaderForPartition.Code
		}
		r, err := send(b.Addr(), lo(-1))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; got.ErrorCode != want {
			t.Errorf("ListOffsets of %s/0 on broker %d (leader %d): error %d, want %d", topic, b.ID, leader, got.ErrorCode, want)
		}
		if r, err = send(b.Addr(), lo(-2)); err != nil {
			t.Fatal(err)
		}
		if got := r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; got.ErrorCode != 0 || got.Offset < 0 {
			t.Errorf("debugging ListOffsets of %s/0 on broker %d: %+v", topic, b.ID, got)
		}
		if r, err = send(b.Addr(), dp); err != nil {
			t.Fatal(err)
		}
		if got := r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]; got.ErrorCode != want {
			t.Errorf("DescribeProducers of %s/0 on broker %d (leader %d): error %d, want %d", topic, b.ID, leader, got.ErrorCode, want)
		}
	}
}

// TestConsumerGroupOnCluster: a franz-go consumer group on the three-broker
// cluster finds its coordinator (the leader of its __consumer_offsets
// partition, created with RF=3), consumes everything produced and commits;
// a second member of the group after the first leaves resumes from the
// commit and reads nothing again. The coordinator's partition does not move
// here (coordinators follow leadership only at first use; see the report).
func TestConsumerGroupOnCluster(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3"})
	waitClusterFormed(t, bs, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.DefaultProduceTopic("grp"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 200
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// consume reads as a member of g1 until want records came, commits,
	// and returns how many it read and how many of them were below from.
	consume := func(want, from int) (int, int) {
		c, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("grp"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got, old := 0, 0
		pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
		defer pcancel()
		for got < want || want == 0 {
			fs := c.PollFetches(pctx)
			if pctx.Err() != nil {
				break
			}
			fs.EachError(func(_ string, p int32, err error) { t.Logf("fetch grp/%d: %v", p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				got++
				var v int
				if _, err := fmt.Sscan(string(r.Value), &v); err != nil || v < from {
					old++
				}
			})
		}
		if err := c.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		return got, old
	}
	if got, _ := consume(n, 0); got != n {
		t.Fatalf("first member read %d records, want %d", got, n)
	}
	committed := func(want int64) {
		t.Helper()
		adm, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...))
		if err != nil {
			t.Fatal(err)
		}
		defer adm.Close()
		offs, err := kadm.NewClient(adm).FetchOffsets(ctx, "g1")
		if err != nil {
			t.Fatal(err)
		}
		total := int64(0)
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		if total != want {
			t.Fatalf("committed offsets sum to %d, want %d: %+v", total, want, offs)
		}
	}
	committed(n)

	// SIGKILL the coordinator's broker: the new leader of the group's
	// __consumer_offsets partition reloads the commits it replicated.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g1"
	r, err := send(bs[0].Addr(), fc)
	if err != nil || r.(*kmsg.FindCoordinatorResponse).ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %+v %v", r, err)
	}
	coord := byID(bs, r.(*kmsg.FindCoordinatorResponse).NodeID)
	// Only the coordinator serves the group; the others say NOT_COORDINATOR.
	for _, b := range bs {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g1", "nobody", 1
		hr, err := send(b.Addr(), hb)
		if err != nil {
			t.Fatal(err)
		}
		code := hr.(*kmsg.HeartbeatResponse).ErrorCode
		if (b == coord) == (code == kerr.NotCoordinator.Code) {
			t.Errorf("Heartbeat of g1 on broker %d (coordinator %d): error %d", b.ID, coord.ID, code)
		}
	}
	coord.Kill()
	t.Logf("SIGKILLed broker %d, the coordinator of g1", coord.ID)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.DefaultProduceTopic("grp"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	const more = 50
	recs = nil
	for i := 0; i < more; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(n + i))})
	}
	if err := cl2.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got, old := consume(more, n); got != more || old != 0 {
		t.Fatalf("after the coordinator's loss the group read %d records (%d already committed), want the %d new ones", got, old, more)
	}
	committed(n + more)
}

// TestRepeatedBouncesUnderLoad is the bounce drill with real
// processes: under a continuous acks=all idempotent producer (RF=3,
// min.insync.replicas=2), five SIGKILLs and five SIGTERMs, alternating
// between the leader of a partition and the controller, each followed by a
// restart and a wait for the full ISR. Every acknowledged record is then
// read back exactly once and in order per partition (history checker), and
// no record failed for good at the client.
func TestRepeatedBouncesUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ten broker bounces")
	}
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3"})
	waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "drill", 3, 3, false)
	waitFullISR(t, bs, "drill", 3)
	ch := history.New()
	p := startProducer(t, bs, "drill", ch)
	p.waitAcked(t, 100, "records acknowledged before the drill")
	for round := 0; round < 10; round++ {
		leaders := waitFullISR(t, bs, "drill", 3)
		victim := byID(bs, leaders[int32(round%3)])
		what := fmt.Sprintf("leader of drill/%d", round%3)
		if round%2 == 1 {
			victim = byID(bs, waitClusterFormed(t, bs, 3))
			what = "controller"
		}
		if round < 5 {
			victim.Kill()
			t.Logf("round %d: SIGKILLed broker %d (%s)", round, victim.ID, what)
		} else {
			if err := victim.Term(60 * time.Second); err != nil {
				t.Fatalf("round %d: SIGTERM broker %d: %v", round, victim.ID, err)
			}
			t.Logf("round %d: SIGTERMed broker %d (%s)", round, victim.ID, what)
		}
		p.waitAcked(t, 100, fmt.Sprintf("records acknowledged in round %d", round))
		victim.Restart()
		waitClusterFormed(t, bs, 3)
	}
	waitFullISR(t, bs, "drill", 3)
	p.close(t)
	// The client retries through every bounce: no record fails for good
	// (an OUT_OF_ORDER_SEQUENCE or a retry timeout would).
	p.mu.Lock()
	if len(p.errs) > 0 {
		t.Errorf("records failed for good: %v", p.errs)
	}
	p.mu.Unlock()
	checkHistory(t, bs, "drill", ch, "after ten bounces")
}

// TestUncleanElectionOffKeepsPartitionOffline: with
// unclean.leader.election.enable=false (Kafka's default), a partition
// whose last ISR member is gone stays offline, even while a replica outside
// the ISR is up, until an ISR member returns; nothing acknowledged is lost.
func TestUncleanElectionOffKeepsPartitionOffline(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "1", "default.replication.factor": "3"})
	waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "solo", 1, 3, false)
	waitFullISR(t, bs, "solo", 3)
	ch := history.New()
	p := startProducer(t, bs, "solo", ch)
	p.waitAcked(t, 100, "records acknowledged with the full ISR")
	// Two brokers go: the ISR shrinks to the third, which takes writes alone.
	leaders := waitFullISR(t, bs, "solo", 3)
	var last *BrokerProc
	var gone []*BrokerProc
	for _, b := range bs {
		if b.ID == leaders[0] {
			last = b
		} else {
			b.Kill()
			gone = append(gone, b)
		}
	}
	p.waitAcked(t, 100, "records acknowledged by the last ISR member")
	p.close(t)
	last.Kill()
	// A replica outside the ISR returns: the partition stays offline.
	gone[0].Restart()
	waitFor(t, 60*time.Second, "the returned replica to see the partition offline", func() (bool, error) {
		m, err := metadata(gone[0].Addr(), "solo")
		if err != nil {
			return false, err
		}
		if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
			return false, fmt.Errorf("%+v", m.Topics)
		}
		pp := m.Topics[0].Partitions[0]
		return pp.Leader == -1 && pp.ErrorCode == kerr.LeaderNotAvailable.Code, fmt.Errorf("%+v", pp)
	})
	// Stays offline for a while (no unclean election).
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if m, err := metadata(gone[0].Addr(), "solo"); err == nil && m.Topics[0].Partitions[0].Leader != -1 {
			t.Fatalf("unclean election: %+v", m.Topics[0].Partitions[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The ISR member returns and leads again with everything acknowledged.
	last.Restart()
	waitFor(t, 60*time.Second, "the ISR member to lead again", func() (bool, error) {
		ps, err := partitionsOf(gone[0].Addr(), "solo")
		if err != nil {
			return false, err
		}
		return ps[0].Leader == last.ID, fmt.Errorf("%+v", ps[0])
	})
	checkHistory(t, []*BrokerProc{last, gone[0]}, "solo", ch, "after the ISR member returned")
}

// createTopic creates topic through the broker at addr with CreateTopics
// v7 and fails the test unless it succeeds (or, with allowExists, the topic
// already exists, as on a benchmark's re-run).
func createTopic(tb testing.TB, addr, topic string, partitions int32, rf int16, allowExists bool) {
	tb.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	ct.Topics = append(ct.Topics, rt)
	r, err := send(addr, ct)
	if err != nil {
		tb.Fatalf("CreateTopics %s: %v", topic, err)
	}
	c := r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
	if c != 0 && !(allowExists && c == kerr.TopicAlreadyExists.Code) {
		tb.Fatalf("CreateTopics %s: error %d", topic, c)
	}
}

// TestLeaderRestartedWithinItsSession: the leader of a partition is
// SIGKILLed under an acks=all idempotent producer and restarted at once,
// while ZooKeeper still holds its previous session's registration: the
// new process waits for that znode to go and registers again, and the
// controller sees the broker bounce (a new broker epoch, one watch round)
// rather than leave and come back. Production goes on to every partition,
// no record fails, and every acknowledged record is read back once and in
// order.
func TestLeaderRestartedWithinItsSession(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3"})
	waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "bounce", 3, 3, false)
	leaders := waitFullISR(t, bs, "bounce", 3)
	ch := history.New()
	p := startProducer(t, bs, "bounce", ch)
	p.waitAcked(t, 300, "records acknowledged before the kill")
	victim := byID(bs, leaders[0])
	victim.Kill()
	victim.Restart()
	t.Logf("SIGKILLed broker %d (leader of bounce/0) and restarted it", victim.ID)
	waitFullISR(t, bs, "bounce", 3)
	p.waitAcked(t, 1000, "records acknowledged after the restart")
	p.close(t)
	// Until it registered, the restarted broker answered clients nothing
	// (start_gate.go): an UNKNOWN_TOPIC_OR_PARTITION from it made franz-go
	// fail records, and its empty Metadata made it forget the cluster.
	p.mu.Lock()
	if len(p.errs) > 0 {
		t.Errorf("records failed: %v", p.errs)
	}
	p.mu.Unlock()
	checkHistory(t, bs, "bounce", ch, "after a kill and restart within the session")
}
