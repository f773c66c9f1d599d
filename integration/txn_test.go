package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCoordinator asks a broker which broker coordinates transactional id.
func txnCoordinator(t *testing.T, bs []*BrokerProc, id string) *BrokerProc {
	t.Helper()
	var coord *BrokerProc
	waitFor(t, 60*time.Second, "the transaction coordinator of "+id, func() (bool, error) {
		for _, b := range bs {
			if !b.Running() {
				continue
			}
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.Version, fc.CoordinatorKey, fc.CoordinatorType = 3, id, 1
			r, err := send(b.Addr(), fc)
			if err != nil {
				return false, err
			}
			fr := r.(*kmsg.FindCoordinatorResponse)
			if fr.ErrorCode != 0 {
				return false, fmt.Errorf("FindCoordinator on broker %d: error %d", b.ID, fr.ErrorCode)
			}
			coord = byID(bs, fr.NodeID)
			return coord != nil && coord.Running(), fmt.Errorf("coordinator %d", fr.NodeID)
		}
		return false, errors.New("no broker running")
	})
	return coord
}

// waitStable waits until no partition of topic has an open transaction:
// the last stable offset (ListOffsets read_committed) equals the high
// watermark on every partition. A marker that never reached a partition
// would hold its LSO back for good.
func waitStable(t *testing.T, bs []*BrokerProc, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitFor(t, 90*time.Second, "LSO = HW on every partition of "+topic, func() (bool, error) {
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = hw.Error()
		}
		if err != nil {
			return false, err
		}
		lso, err := listCommittedEnds(ctx, cl, topic)
		if err != nil {
			return false, err
		}
		for p, o := range lso {
			h, _ := hw.Lookup(topic, p)
			if h.Offset != o {
				return false, fmt.Errorf("partition %d: LSO %d, HW %d", p, o, h.Offset)
			}
		}
		return len(lso) > 0, fmt.Errorf("no partitions")
	})
}

// listCommittedEnds is ListOffsets(latest) with isolation read_committed:
// every partition's last stable offset.
func listCommittedEnds(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	md := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, rt)
	mr, err := md.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
		return nil, fmt.Errorf("metadata of %s: %+v", topic, mr.Topics)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for _, p := range mr.Topics[0].Partitions {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p.Partition, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	req.Topics = append(req.Topics, lt)
	out := map[int32]int64{}
	// kgo splits the request by partition leader.
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			return nil, shard.Err
		}
		for _, rt := range shard.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return nil, fmt.Errorf("ListOffsets %s/%d: error %d", topic, rp.Partition, rp.ErrorCode)
				}
				out[rp.Partition] = rp.Offset
			}
		}
	}
	return out, nil
}

// consumeValues reads topic from the start with isolation iso until want
// records came (or, with want < 0, until the end offsets seen at the start
// are reached), and returns the values read.
func consumeValues(t *testing.T, bs []*BrokerProc, topic string, want int, iso kgo.IsolationLevel) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v after %d of %d records", topic, ctx.Err(), len(out), want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// distinctLeaders waits for a full ISR on topic and fails unless its
// partitions are led by at least two brokers, so markers cross brokers.
func distinctLeaders(t *testing.T, bs []*BrokerProc, topic string) map[int32]int32 {
	t.Helper()
	leaders := waitFullISR(t, bs, topic, 3)
	seen := map[int32]bool{}
	for _, l := range leaders {
		seen[l] = true
	}
	if len(seen) < 2 {
		t.Fatalf("%s: every partition led by one broker (%v); the test needs markers across brokers", topic, leaders)
	}
	return leaders
}

// TestTransactionsAcrossBrokers: three brokers, RF=3, topics whose
// partitions have different leaders, so the transaction coordinator sends
// markers to other brokers (WriteTxnMarkers) and the partition leaders
// check transactional produces with a coordinator elsewhere. Committed
// transactions are seen by read_committed consumers, aborted ones are not
// (read_uncommitted sees both), and no partition keeps an open
// transaction. Then a consume-transform-produce chain (franz-go's
// GroupTransactSession) runs while the transaction coordinator's broker is
// SIGKILLed: the output read with read_committed holds every input exactly
// once, and every LSO catches up with its HW.
func TestTransactionsAcrossBrokers(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3"})
	waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "txn-data", 3, 3, false)
	t.Logf("txn-data leaders: %v", distinctLeaders(t, bs, "txn-data"))

	// Commit, abort, commit.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pr, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.TransactionalID("txn-basic"),
		kgo.DefaultProduceTopic("txn-data"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	t.Logf("transaction coordinator of txn-basic: broker %d", txnCoordinator(t, bs, "txn-basic").ID)
	for i, commit := range []bool{true, false, true} {
		if err := pr.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for p := int32(0); p < 3; p++ {
			for j := 0; j < 3; j++ {
				recs = append(recs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("txn%d-p%d-%d", i, p, j))})
			}
		}
		if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if err := pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("ending transaction %d: %v", i, err)
		}
	}
	waitStable(t, bs, "txn-data")
	committed := consumeValues(t, bs, "txn-data", 18, kgo.ReadCommitted())
	for _, v := range committed {
		if v[:4] == "txn1" {
			t.Fatalf("read_committed saw %s of the aborted transaction", v)
		}
	}
	if len(committed) != 18 {
		t.Fatalf("read_committed read %d records, want 18", len(committed))
	}
	if all := consumeValues(t, bs, "txn-data", 27, kgo.ReadUncommitted()); len(all) != 27 {
		t.Fatalf("read_uncommitted read %d records, want 27", len(all))
	}

	// The exactly-once chain through a SIGKILL of the coordinator.
	createTopic(t, bs[0].Addr(), "eos-in", 3, 3, false)
	createTopic(t, bs[0].Addr(), "eos-out", 3, 3, false)
	distinctLeaders(t, bs, "eos-out")
	const n = 600
	in := make([]*kgo.Record, n)
	for i := range in {
		in[i] = &kgo.Record{Topic: "eos-in", Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.ProduceSync(ctx, in...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	plain.Close()

	seeds := addrsOf(bs)
	var transformed atomic.Int64
	var aborted atomic.Int64
	tctx, tcancel := context.WithCancel(ctx)
	defer tcancel()
	errc := make(chan error, 1)
	// Once a third is transformed, the transformer stops inside an open
	// transaction (records produced, End not called) until the test has
	// killed the coordinator.
	midTxn, killed := make(chan struct{}), make(chan struct{})
	go func() {
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(seeds...),
			kgo.TransactionalID("eos-transformer"),
			kgo.ConsumerGroup("eos-group"),
			kgo.ConsumeTopics("eos-in"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.DefaultProduceTopic("eos-out"),
			kgo.TransactionTimeout(20*time.Second),
			kgo.FetchMaxWait(200*time.Millisecond),
			kgo.MetadataMinAge(100*time.Millisecond),
			kgo.RetryTimeout(2*time.Minute),
		)
		if err != nil {
			errc <- err
			return
		}
		defer sess.Close()
		paused := false
		for tctx.Err() == nil {
			fs := sess.PollRecords(tctx, 20)
			if fs.Empty() {
				continue
			}
			if err := sess.Begin(); err != nil {
				errc <- fmt.Errorf("begin: %w", err)
				return
			}
			for _, r := range fs.Records() {
				sess.Produce(tctx, &kgo.Record{Key: r.Key, Value: r.Value}, nil)
			}
			if !paused && transformed.Load() >= n/3 {
				paused = true
				close(midTxn)
				select {
				case <-killed:
				case <-tctx.Done():
				}
			}
			ok, err := sess.End(tctx, kgo.TryCommit)
			switch {
			case err != nil || !ok:
				aborted.Add(1) // the records come again
			default:
				transformed.Add(int64(len(fs.Records())))
			}
		}
		errc <- nil
	}()
	select {
	case <-midTxn:
	case err := <-errc:
		t.Fatalf("transformer ended before a third was transformed: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatalf("a third of the input not transformed within 90s (%d)", transformed.Load())
	}
	coord := txnCoordinator(t, bs, "eos-transformer")
	coord.Kill()
	close(killed)
	t.Logf("SIGKILLed broker %d, the transaction coordinator of eos-transformer, after %d records", coord.ID, transformed.Load())
	out := consumeValues(t, bs, "eos-out", n, kgo.ReadCommitted())
	tcancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("transformer: %v", err)
	}
	t.Logf("%d transactions aborted or failed on the way", aborted.Load())
	seen := map[string]int{}
	for _, v := range out {
		seen[v]++
	}
	for i := 0; i < n; i++ {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("input %d appears %d times in the committed output", i, c)
		}
	}
	if len(out) != n {
		t.Errorf("read %d committed records, want %d", len(out), n)
	}
	waitStable(t, bs, "eos-out")
	// The killed broker comes back and catches up; nothing hangs there either.
	coord.Restart()
	waitFullISR(t, bs, "eos-out", 3)
	waitStable(t, bs, "eos-out")
	if extra := consumeValues(t, bs, "eos-out", n, kgo.ReadCommitted()); len(extra) != n {
		t.Errorf("after the restart read_committed reads %d records, want %d", len(extra), n)
	}
}
