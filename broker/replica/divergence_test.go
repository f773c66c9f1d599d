package replica

// KIP-101's two divergence scenarios and KIP-279's, as deterministic tests:
// the fetchers have no goroutine (manual mode) and the test runs each
// truncation and fetch step over TCP itself, so every log is in exactly the
// state the scenario describes when leadership moves.

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func manualRC() ReplicationConfig {
	return ReplicationConfig{LagTimeMax: time.Hour, FetchWaitMax: 10 * time.Millisecond, FetchBackoff: 10 * time.Millisecond}
}

func (c *testCluster) wantValues(id int32, want ...string) {
	c.t.Helper()
	if got := c.values(id, 0); !slices.Equal(got, want) {
		c.t.Fatalf("broker %d holds %q, want %q", id, got, want)
	}
}

// wantNoOffsetForEpoch fails t if leader served OffsetForLeaderEpoch: its
// followers (Fetch v12+, logs with epochs) learn of a divergence from
// their fetches' DivergingEpoch (KIP-320), as Kafka's since 2.7.
func wantNoOffsetForEpoch(t *testing.T, leader *testBroker) {
	t.Helper()
	if n := leader.servedOffsetForEpochs(); n != 0 {
		t.Fatalf("broker %d served %d OffsetForLeaderEpoch requests, want none: the fetches' last fetched epochs tell a divergence", leader.id, n)
	}
}

// newPairWithM1 is a cluster of brokers 1 and 2 (all: both) whose
// partition broker 1 leads at epoch 1 with both in the ISR, and m1 written
// and copied by broker 2 (one fetch: its HW may lag).
func newPairWithM1(t *testing.T, rc ReplicationConfig) (c *testCluster, all []int32) {
	t.Helper()
	c = newTestCluster(t, 2, rc, true, 1)
	all = []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, 1, "m1")
	c.step(2, 1)
	return c, all
}

func (c *testCluster) wantIdentical(a, b int32) {
	c.t.Helper()
	if !bytes.Equal(c.logBytes(a, 0), c.logBytes(b, 0)) {
		c.t.Fatalf("brokers %d and %d differ: %q vs %q", a, b, c.values(a, 0), c.values(b, 0))
	}
	if ea, eb := c.part(a, 0).Log.LeaderEpochs(), c.part(b, 0).Log.LeaderEpochs(); !slices.Equal(ea, eb) {
		c.t.Fatalf("brokers %d and %d have epochs %v and %v", a, b, ea, eb)
	}
}

// KIP-101 scenario 1: a follower restarts with its HW behind its log end,
// then becomes leader at once. Truncating to the HW would lose m2, which
// the old leader may have acknowledged; truncating by OffsetForLeaderEpoch
// keeps it.
func TestKIP101HighWatermarkTruncation(t *testing.T) {
	c := newTestCluster(t, 2, manualRC(), true, 1)
	all := []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, 1, "m1")
	c.mustProduce(1, 1, "m2")
	c.step(2, 1) // B copies m1 and m2; the HW it learns is still 0
	if hw, leo := c.part(2, 0).HighWatermark(), c.part(2, 0).Log.LogEndOffset(); hw >= leo {
		t.Fatalf("setup: follower HW %d, LEO %d; want the HW behind", hw, leo)
	}
	c.restart(2)
	c.apply(2, 0, c.state(0)) // B follows A again after its restart
	c.truncateOnly(2, 1)
	c.wantValues(2, "m1", "m2")
	// A dies; B is elected with the ISR it was in.
	c.broker(1).stop()
	c.elect(0, 2, []int32{2}, all, 2)
	c.wantValues(2, "m1", "m2")
	c.mustProduce(2, 1, "m3")
	// A returns as a follower and ends identical to B.
	c.restart(1)
	c.apply(1, 0, c.state(0))
	c.step(1, 2)
	c.step(1, 2)
	c.wantValues(1, "m1", "m2", "m3")
	c.wantIdentical(1, 2)
}

// KIP-101 scenario 2: both replicas crash; B, which lacked m2, comes back
// first and leads, writing m3 at the offset where A has m2. When A returns
// as a follower it must drop m2 (by the epoch B ended epoch 1 at), not keep
// it because it is below A's HW.
func TestKIP101ReplicaDivergenceOnRestart(t *testing.T) {
	c, all := newPairWithM1(t, manualRC())
	c.step(2, 1) // the HW reaches 1 on both
	// A appends m2 alone (the ISR shrank to A) and its HW passes it.
	st, err := c.ChangeISR("t", 0, c.state(0), []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	c.apply(1, 0, st)
	c.mustProduce(1, 1, "m2")
	if hw := c.part(1, 0).HighWatermark(); hw != 2 {
		t.Fatalf("setup: A's HW %d, want 2", hw)
	}
	// Both crash; B comes back first and is elected (unclean: it was out of the ISR).
	c.broker(1).stop()
	c.restart(2)
	c.elect(0, 2, []int32{2}, all, 2)
	c.mustProduce(2, 1, "m3")
	c.restart(1)
	c.apply(1, 0, c.state(0))
	c.step(1, 2)
	c.step(1, 2)
	c.wantValues(1, "m1", "m3")
	c.wantIdentical(1, 2)
	wantNoOffsetForEpoch(t, c.broker(2))
	if hw := c.part(1, 0).HighWatermark(); hw != 2 {
		t.Fatalf("A's HW %d after following B, want 2", hw)
	}
}

// KIP-279: leadership moves twice quickly. A (epoch 1) has m2 that B lacks;
// B (epoch 2) wrote m3 at the same offset; A leads again (epoch 3) and
// writes m4. B, following A, fetches with its last epoch 2; A answers that
// its log diverged at epoch 1 (A has no epoch 2), which B ends earlier
// than A: B truncates to its own end of epoch 1, drops m3 and ends
// identical to A.
func TestKIP279FastLeaderFailover(t *testing.T) {
	c, all := newPairWithM1(t, manualRC())
	c.mustProduce(1, 1, "m2") // not replicated
	c.elect(0, 2, []int32{2}, all, 2)
	c.mustProduce(2, 1, "m3") // at offset 1, epoch 2
	c.elect(0, 1, []int32{1}, all, 1)
	c.mustProduce(1, 1, "m4") // at offset 2, epoch 3
	c.apply(2, 0, c.state(0))
	c.step(2, 1)
	c.step(2, 1)
	c.wantValues(2, "m1", "m2", "m4")
	c.wantIdentical(1, 2)
	wantNoOffsetForEpoch(t, c.broker(1))
	want := []int32{1, 3}
	var got []int32
	for _, e := range c.part(2, 0).Log.LeaderEpochs() {
		got = append(got, e.Epoch)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("B's epochs %v, want %v (epoch 2 truncated away)", got, want)
	}
}

// A follower whose log ends below the leader's log start empties its log
// and restarts it at the leader's log start (OFFSET_OUT_OF_RANGE).
func TestFollowerBelowLeaderLogStart(t *testing.T) {
	c := newTestCluster(t, 2, manualRC(), true, 1)
	all := []int32{1, 2}
	c.elect(0, 1, []int32{1}, all, 1)
	for _, v := range []string{"a", "b", "c"} {
		c.mustProduce(1, 1, v)
	}
	if err := c.part(1, 0).Log.SetLogStartOffset(2); err != nil {
		t.Fatal(err)
	}
	c.apply(2, 0, c.state(0))
	c.step(2, 1) // no epoch yet: no truncation; the fetch at 0 is out of range
	c.step(2, 1)
	p := c.part(2, 0)
	if p.Log.LogStartOffset() != 2 || p.Log.LogEndOffset() != 3 {
		t.Fatalf("follower log [%d, %d), want [2, 3)", p.Log.LogStartOffset(), p.Log.LogEndOffset())
	}
	c.wantValues(2, "c")
}

// A LeaderAndIsr with an older leader epoch is ignored.
func TestStaleLeaderEpochIgnored(t *testing.T) {
	c := newTestCluster(t, 2, manualRC(), true, 1)
	all := []int32{1, 2}
	old := c.elect(0, 1, all, all, all...)
	c.elect(0, 2, all, all, all...)
	if err := c.broker(1).m.MakeLeader("t", 0, c.topic.ID, old); err == nil {
		t.Fatal("MakeLeader with an older leader epoch applied")
	}
	if c.part(1, 0).IsLeader() || c.part(1, 0).LeaderEpoch() != 2 {
		t.Fatalf("broker 1 leads=%v at epoch %d after a stale MakeLeader", c.part(1, 0).IsLeader(), c.part(1, 0).LeaderEpoch())
	}
}

// A consumer that read m2 from the old leader (epoch 1, next offset 2) and
// fetches from the new leader, whose epoch 1 ended at 1, is told where its
// log diverged (KIP-320) and gets no records.
func TestFetchDivergingEpoch(t *testing.T) {
	c, all := newPairWithM1(t, manualRC())
	c.step(2, 1)
	c.mustProduce(1, 1, "m2") // read by the consumer, never replicated
	c.elect(0, 2, []int32{2}, all, 2)
	c.mustProduce(2, 1, "m3")
	fetch := func(lastEpoch int32, offset int64) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = 12, -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.FetchOffset, rp.PartitionMaxBytes = 0, 2, lastEpoch, offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		c.broker(2).m.Fetch(req, resp)
		return resp.Topics[0].Partitions[0]
	}
	sp := fetch(1, 2)
	if sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch != 1 || sp.DivergingEpoch.EndOffset != 1 || len(sp.RecordBatches) != 0 {
		t.Fatalf("diverged consumer: error %d, diverging %+v, %d bytes; want epoch 1 ending at 1 and no records",
			sp.ErrorCode, sp.DivergingEpoch, len(sp.RecordBatches))
	}
	if sp := fetch(1, 1); sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch != -1 || len(sp.RecordBatches) == 0 {
		t.Fatalf("consumer at the divergence point: error %d, diverging %+v, %d bytes; want m3", sp.ErrorCode, sp.DivergingEpoch, len(sp.RecordBatches))
	}
}

// A follower whose log diverged from the leader's fetches with a last
// fetched epoch the leader ended earlier (a Kafka 3.x follower truncates
// by the fetch's DivergingEpoch, not by OffsetForLeaderEpoch first). Its
// fetch offset says nothing of what it holds: the leader must answer the
// divergence and neither count the offset towards the HW nor take the
// follower into the ISR, as Kafka's Partition.fetchRecords. Before, the
// leader did both, and a follower that later led lost acknowledged
// records.
func TestDivergingFollowerFetchIsNotCounted(t *testing.T) {
	c := newTestCluster(t, 2, manualRC(), true, 1)
	all := []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, 1, "m1")
	c.step(2, 1) // B copies m1 (epoch 1)
	// B leads alone at epoch 2 and writes x at offset 1; A does not copy it.
	c.elect(0, 2, []int32{2}, all, 2)
	c.mustProduce(2, 1, "x")
	// A leads alone at epoch 3 from its log (m1) and writes y at offset 1.
	st := c.elect(0, 1, []int32{1}, all, 1)
	c.mustProduce(1, 1, "y")
	leader := c.part(1, 0)
	hw := leader.HighWatermark()
	// B, with m1 and x, fetches at its log end with its last epoch (2).
	b := c.part(2, 0)
	if leo := b.Log.LogEndOffset(); leo != hw {
		t.Fatalf("setup: follower log end %d, leader HW %d; want them equal, so that only the divergence keeps B out", leo, hw)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis = 12, 2, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = c.topic.Name
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, b.Log.LogEndOffset(), 1<<20
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = st.LeaderEpoch, 2
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	c.broker(1).m.Fetch(req, resp)
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch != 1 || sp.DivergingEpoch.EndOffset != 1 {
		t.Fatalf("answer: error %d, diverging epoch %+v; want epoch 1 ending at 1", sp.ErrorCode, sp.DivergingEpoch)
	}
	leader.mu.Lock()
	l := leader.mu.repl.leader
	pending, followerLEO := l.Pending(), l.FollowerLEO(2)
	leader.mu.Unlock()
	if pending != nil || followerLEO != -1 {
		t.Fatalf("the diverging fetch counted: ISR change %+v, follower log end %d; want none and -1", pending, followerLEO)
	}
	// Once B follows A, truncates and copies y, it is in sync for real.
	c.apply(2, 0, st)
	c.step(2, 1)
	c.step(2, 1)
	c.wantIdentical(1, 2)
}

// An ISR expansion whose write landed but whose answer was lost (a
// ZooKeeper connection that dropped after the write) must not be taken for
// a write that failed: the stored ISR names the follower, so the next
// election may pick it, and the leader must not acknowledge records it
// lacks. The leader keeps the proposal pending (the HW waits on the
// follower, as for any expansion in flight), writes it again, finds the
// version moved and follows the stored ISR. Before, it dropped the
// proposal and went on acknowledging records with itself alone.
func TestISRExpansionWithLostAnswer(t *testing.T) {
	c := newTestCluster(t, 2, manualRC(), true, 1)
	all := []int32{1, 2}
	c.elect(0, 1, []int32{1}, all, all...)
	c.mustProduce(1, 1, "m1")
	c.mu.Lock()
	c.lostAnswers = 1
	c.mu.Unlock()
	c.step(2, 1) // B copies m1
	c.step(2, 1) // B fetches at the leader's log end: the leader proposes [1 2]
	waitFor(t, "the expansion written", func() bool { return slices.Equal(c.state(0).ISR, all) })

	// B has stopped fetching; a record acks=1 must not move the HW past
	// what B holds, since the stored ISR says B is in sync.
	leader := c.part(1, 0)
	c.mustProduce(1, 1, "m2")
	if hw, leo := leader.HighWatermark(), leader.Log.LogEndOffset(); hw == leo {
		t.Fatalf("HW %d reached the log end without the follower the stored ISR %v names", hw, c.state(0).ISR)
	}
	// The leader writes the change again, finds the version moved and
	// follows the stored ISR.
	waitFor(t, "the leader following the stored ISR", func() bool {
		leader.mu.Lock()
		defer leader.mu.Unlock()
		l := leader.mu.repl.leader
		return l.Pending() == nil && slices.Equal(l.ISR(), all)
	})
	c.step(2, 1)
	c.step(2, 1)
	c.waitReplicated(1, 2)
	c.wantIdentical(1, 2)
}

// A follower whose log runs past its new leader's end (it copied m2 from
// the old leader; the new one never had it) is told to cut by its fetch's
// DivergingEpoch, as Kafka's leader checks the last fetched epoch before
// the fetch offset's range (not OFFSET_OUT_OF_RANGE and an
// OffsetForLeaderEpoch round), and then copies the new leader's m3.
func TestFollowerPastLeaderEndTruncatesOnFetch(t *testing.T) {
	c, all := newPairWithM1(t, manualRC())
	c.mustProduce(1, 1, "m2") // A alone
	c.elect(0, 2, []int32{2}, all, 2)
	if leo := c.part(2, 0).Log.LogEndOffset(); leo != 1 {
		t.Fatalf("setup: B's log end %d, want 1", leo)
	}
	c.apply(1, 0, c.state(0))
	c.step(1, 2) // diverging at epoch 1, offset 1: A cuts m2
	if leo := c.part(1, 0).Log.LogEndOffset(); leo != 1 {
		t.Fatalf("A's log end %d after its first fetch from B, want 1 (m2 cut)", leo)
	}
	c.mustProduce(2, 1, "m3")
	c.step(1, 2)
	c.wantValues(1, "m1", "m3")
	c.wantIdentical(1, 2)
	wantNoOffsetForEpoch(t, c.broker(2))
}

// Batches that do not continue a follower's log (they start below its log
// end) send it back to truncating at once the first time, and after
// replica.fetch.backoff.ms when it happens again with nothing appended
// between: before, a follower facing such a leader retried at full speed.
func TestFollowerMisalignedBatchesBackOff(t *testing.T) {
	rc := manualRC()
	rc.FetchBackoff = time.Hour
	c, _ := newPairWithM1(t, rc)
	f := c.fetcherOf(2, 1)
	tp := tpOf(c.part(2, 0))
	state := func() fetchPart {
		f.mu.Lock()
		defer f.mu.Unlock()
		return *f.parts[tp]
	}
	stale := kmsg.NewFetchResponseTopicPartition()
	stale.HighWatermark, stale.LogStartOffset = 1, 0
	stale.RecordBatches = c.logBytes(1, 0) // m1 again, at offset 0 < the follower's log end 1
	f.applyFetched(tp, state(), 1, &stale)
	if fp := state(); !fp.truncating || !fp.misaligned || !fp.retryAt.IsZero() {
		t.Fatalf("after the first misaligned answer: truncating %v, misaligned %v, retry at %v; want truncating at once", fp.truncating, fp.misaligned, fp.retryAt)
	}
	f.applyFetched(tp, state(), 1, &stale)
	if fp := state(); !fp.truncating || time.Until(fp.retryAt) < time.Minute {
		t.Fatalf("after the second: truncating %v, retry in %v; want a backoff of replica.fetch.backoff.ms", fp.truncating, time.Until(fp.retryAt))
	}
	// An answer that continues the log clears the mark.
	c.mustProduce(1, 1, "m2")
	next := kmsg.NewFetchResponseTopicPartition()
	next.HighWatermark, next.LogStartOffset = 2, 0
	whole := c.logBytes(1, 0)
	next.RecordBatches = whole[len(stale.RecordBatches):]
	f.update(tp, state().epoch, func(x *fetchPart) { x.truncating, x.retryAt = false, time.Time{} })
	f.applyFetched(tp, state(), 1, &next)
	if fp := state(); fp.misaligned {
		t.Fatal("still marked misaligned after an append")
	}
	c.wantValues(2, "m1", "m2")
}

// A replica that led an epoch in which it wrote nothing (the controller
// bumped the epoch, then moved the leadership) follows with that epoch as
// its log's latest, which its new leader never had: the leader answers a
// DivergingEpoch at the follower's log end, and the follower drops the
// empty epoch (Kafka's truncateTo, even with nothing to cut) and copies on.
// Before, the follower cut nothing, fetched with the same epoch and got the
// same answer for ever, out of the ISR (Kafka 3.9's preferred election to
// it failed: TestKafka39ToolsUnderEitherController).
func TestFollowerDropsEpochItLedWithoutRecords(t *testing.T) {
	c, all := newPairWithM1(t, manualRC())
	c.step(2, 1)                    // the HW reaches 1 on both
	c.elect(0, 1, all, all, all...) // broker 1 leads on at epoch 2, writing nothing
	if got := c.part(1, 0).Log.LatestEpoch(); got != 2 {
		t.Fatalf("setup: broker 1's latest epoch %d, want 2 (assigned at its log end)", got)
	}
	c.elect(0, 2, all, all, all...) // broker 2 leads at epoch 3
	c.mustProduce(2, 1, "m2")
	c.step(1, 2) // diverging at epoch 1, ending at 1: broker 1 drops epoch 2
	if got := c.part(1, 0).Log.LatestEpoch(); got != 1 {
		t.Fatalf("broker 1's latest epoch %d after its first fetch from broker 2, want 1", got)
	}
	c.step(1, 2)
	c.wantValues(1, "m1", "m2")
	c.wantIdentical(1, 2)
	wantNoOffsetForEpoch(t, c.broker(2))
}
