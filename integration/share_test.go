package integration

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/controller/zkstore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareConsumer is a franz-go share consumer that accepts every record it
// gets and counts a record as confirmed only when the broker answered its
// partition's acknowledgement without error (ShareAckCallback after
// FlushAcks).
type shareConsumer struct {
	cl *kgo.Client
	mu sync.Mutex
	// results are the acknowledgement outcomes since the last poll.
	results []kgo.ShareAckResult
}

func newShareConsumer(t *testing.T, bs []*BrokerProc, group, topic string) *shareConsumer {
	t.Helper()
	sc := &shareConsumer{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(25),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			sc.results = append(sc.results, rs...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	sc.cl = cl
	return sc
}

// poll fetches, accepts and flushes one poll's records and returns the
// keys delivered and those whose acknowledgement was confirmed.
func (sc *shareConsumer) poll(ctx context.Context) (delivered, confirmed []string) {
	fs := sc.cl.PollRecords(ctx, 25)
	rs := fs.Records()
	for _, r := range rs {
		r.Ack(kgo.AckAccept)
	}
	sc.mu.Lock()
	sc.results = nil
	sc.mu.Unlock()
	if err := sc.cl.FlushAcks(ctx); err != nil {
		return keysOf(rs), nil
	}
	sc.mu.Lock()
	ok := map[string]bool{}
	bad := map[string]bool{}
	for _, r := range sc.results {
		k := r.Topic + "/" + strconv.Itoa(int(r.Partition))
		if r.Err != nil {
			bad[k] = true
		} else {
			ok[k] = true
		}
	}
	sc.mu.Unlock()
	for _, r := range rs {
		k := r.Topic + "/" + strconv.Itoa(int(r.Partition))
		if ok[k] && !bad[k] {
			confirmed = append(confirmed, string(r.Key))
		}
	}
	return keysOf(rs), confirmed
}

func keysOf(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Key)
	}
	return out
}

// TestShareGroupOnClusterSurvivesLeaderKill: share groups on three
// brokers with Kafka's split (membership at the group coordinator,
// ShareFetch/ShareAcknowledge at the partition leaders, share-partition
// state at the leaders of __share_group_state, RF=3). A group config set
// through one broker reaches the others; a franz-go share consumer
// accepts a third of a topic's records, the leader of a partition is
// SIGKILLed and the consumer goes on through the failover to two thirds;
// the victim restarts, the leader of a partition is stopped with SIGTERM
// (controlled shutdown moves its leaderships) and the consumer goes on to
// the end of the topic. Every record is delivered, and no
// record whose acknowledgement the broker confirmed is ever delivered
// again: its Acknowledged state was replicated before the answer, so the
// new leader reads it from the share coordinator. At the end every
// share-partition's start offset is the log end, as every broker's
// DescribeShareGroupOffsets (from the group's coordinator) reports.
func TestShareGroupOnClusterSurvivesLeaderKill(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3"})
	waitClusterFormed(t, bs, 3)
	const topic, group, n = "shr", "shr-group", 600
	createTopic(t, bs[0].Addr(), topic, 3, 3, false)
	leaders := waitFullISR(t, bs, topic, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// share.auto.offset.reset=earliest through broker 0; every broker
	// must see it (the leaders initialize the share-partitions).
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	if r, err := send(bs[0].Addr(), alter); err != nil || r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset=earliest: %v %+v", err, r)
	}
	for _, b := range bs {
		waitFor(t, 30*time.Second, fmt.Sprintf("broker %d to see the group config", b.ID), func() (bool, error) {
			d := kmsg.NewPtrDescribeConfigsRequest()
			dr := kmsg.NewDescribeConfigsRequestResource()
			dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{"share.auto.offset.reset"}
			d.Resources = append(d.Resources, dr)
			r, err := send(b.Addr(), d)
			if err != nil {
				return false, err
			}
			rs := r.(*kmsg.DescribeConfigsResponse).Resources
			if len(rs) != 1 || len(rs[0].Configs) != 1 || rs[0].Configs[0].Value == nil {
				return false, fmt.Errorf("%+v", rs)
			}
			return *rs[0].Configs[0].Value == "earliest", fmt.Errorf("value %s", *rs[0].Configs[0].Value)
		})
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%04d", i)), Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	sc := newShareConsumer(t, bs, group, topic)
	defer func() { sc.cl.Close() }()
	confirmed := map[string]bool{}
	delivered := map[string]int{}
	consume := func(until int, what string) {
		t.Helper()
		for len(confirmed) < until {
			if ctx.Err() != nil {
				t.Fatalf("%s: %d of %d records confirmed", what, len(confirmed), until)
			}
			got, ok := sc.poll(ctx)
			for _, k := range got {
				if confirmed[k] {
					t.Fatalf("%s: record %s delivered again after its acknowledgement was confirmed", what, k)
				}
				delivered[k]++
			}
			for _, k := range ok {
				confirmed[k] = true
			}
		}
	}
	consume(n/3, "before the kill")
	// The victims lead data partitions but not the group's coordinator
	// partition: share-group membership lives in the coordinator's memory
	// (docs/ARCHITECTURE.md), so a coordinator move answers the member
	// UNKNOWN_MEMBER_ID and franz-go resets its share sessions, dropping
	// acknowledgements in flight; this test is about the data partitions.
	part, victim := leaderAwayFromCoordinator(t, bs, leaders, group)
	victim.Kill()
	t.Logf("SIGKILLed broker %d (leader of %s/%d) with %d of %d records confirmed", victim.ID, topic, part, len(confirmed), n)
	consume(2*n/3, "after the kill")
	victim.Restart()
	waitReady(t, victim)
	leaders = waitFullISR(t, bs, topic, 3)

	part, bounced := leaderAwayFromCoordinator(t, bs, leaders, group)
	if err := bounced.Term(60 * time.Second); err != nil {
		t.Fatalf("SIGTERM broker %d: %v", bounced.ID, err)
	}
	t.Logf("SIGTERMed broker %d (leader of %s/%d) with %d of %d records confirmed", bounced.ID, topic, part, len(confirmed), n)
	consume(n, "after the SIGTERM")
	bounced.Restart()
	waitReady(t, bounced)
	waitFullISR(t, bs, topic, 3)
	redelivered := 0
	for _, c := range delivered {
		redelivered += c - 1
	}
	t.Logf("all %d records confirmed; %d deliveries were redeliveries of records never confirmed", n, redelivered)
	sc.cl.Close()

	// Every share-partition finished: its start offset is the log end.
	waitFor(t, 60*time.Second, "every share-partition's start offset at the log end", func() (bool, error) {
		for _, b := range bs {
			d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			d.Version = 1 // Lag
			rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			rg.GroupID = group
			d.Groups = append(d.Groups, rg)
			r, err := send(b.Addr(), d)
			if err != nil {
				return false, err
			}
			g := r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
			if g.ErrorCode == kerr.NotCoordinator.Code {
				continue
			}
			if g.ErrorCode != 0 {
				return false, fmt.Errorf("broker %d: %v", b.ID, kerr.ErrorForCode(g.ErrorCode))
			}
			total := int64(0)
			for _, rt := range g.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 || rp.Lag != 0 {
						return false, fmt.Errorf("broker %d: %s/%d start %d lag %d error %d", b.ID, rt.Topic, rp.Partition, rp.StartOffset, rp.Lag, rp.ErrorCode)
					}
					total += rp.StartOffset
				}
			}
			return total == n, fmt.Errorf("broker %d: start offsets sum to %d, want %d", b.ID, total, n)
		}
		return false, fmt.Errorf("no broker coordinates %s", group)
	})
}

// TestShareGroupReadsStoredGroupConfig: a share-partition's leader reads
// the group's configs from ZooKeeper before it initializes the
// share-partition, so share.auto.offset.reset=earliest applies even when
// the leader has not yet heard of the change (here it is written to
// /config/groups/<group> without the /config/changes announcement, as if
// that were still on its way): the records produced before the consumer
// joined are delivered.
func TestShareGroupReadsStoredGroupConfig(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 2, nil)
	waitClusterFormed(t, bs, 2)
	const topic, group, n = "shr-cfg", "shr-cfg-group", 10
	createTopic(t, bs[0].Addr(), topic, 1, 2, false)
	waitFullISR(t, bs, topic, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()

	zc := dial(t, z.Addr+"/kbroker")
	data, err := zkdata.EncodeConfigEntity(map[string]string{"share.auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zc.CreateWithParents(zkdata.ConfigEntityPath("groups", zkstore.Sanitize(group)), data, 0); err != nil {
		t.Fatal(err)
	}

	sc := newShareConsumer(t, bs, group, topic)
	defer sc.cl.Close()
	confirmed := map[string]bool{}
	for len(confirmed) < n {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records produced before the consumer joined were delivered", len(confirmed), n)
		}
		_, ok := sc.poll(ctx)
		for _, k := range ok {
			confirmed[k] = true
		}
	}
}

// leaderAwayFromCoordinator returns the lowest partition of leaders
// (partition → leader) whose leader does not coordinate group, and that
// broker.
func leaderAwayFromCoordinator(t *testing.T, bs []*BrokerProc, leaders map[int32]int32, group string) (int32, *BrokerProc) {
	t.Helper()
	var coord int32
	waitFor(t, 30*time.Second, "the coordinator of "+group, func() (bool, error) {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = group
		r, err := send(bs[0].Addr(), fc)
		if err != nil {
			return false, err
		}
		fr := r.(*kmsg.FindCoordinatorResponse)
		coord = fr.NodeID
		return fr.ErrorCode == 0, kerr.ErrorForCode(fr.ErrorCode)
	})
	for p := range int32(len(leaders)) {
		if l := leaders[p]; l != coord {
			return p, byID(bs, l)
		}
	}
	t.Fatalf("every partition is led by broker %d, %s's coordinator: %v", coord, group, leaders)
	return 0, nil
}
