package integration

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFiveBrokersReplicasElsewhere runs the shapes of users' dev clusters,
// where a topic's replicas do not cover every broker: five brokers, RF 1
// and RF 2 topics, so that the group coordinator or the broker answering
// an admin request often hosts no replica of the partition. Kafka answers
// from the cluster's metadata, not from the local replicas, and so must
// kbroker:
//   - CreateTopics, CreatePartitions and DeleteTopics answer once the
//     receiving broker's metadata shows the result; the other brokers show
//     the same leaders or nothing yet, never something else, and when the
//     controller received it (as clients send it) they all show it;
//   - consumer groups (classic and KIP-848) commit and fetch offsets of an
//     RF 1 topic whose only replica is not the coordinator, bootstrapped
//     from each broker;
//   - topic configs are described and altered through a broker with no
//     replica, and the leader applies the change;
//   - ListOffsets, DescribeProducers and DeleteRecords sent to a broker
//     with no replica answer NOT_LEADER_OR_FOLLOWER; DescribeTopicPartitions
//     answers from the cluster's metadata on every broker;
//   - manual replica assignments in any order, for new topics and new
//     partitions, with Kafka 3.9's checks;
//   - a controlled shutdown is answered once every broker's metadata
//     shows the moved leaderships;
//   - the cluster stops broker by broker, each exiting cleanly.
func TestFiveBrokersReplicasElsewhere(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 5, map[string]string{
		"default.replication.factor": "2",
		// Kafka's defaults, so that a stop that retries in vain shows.
		"controlled.shutdown.max.retries":      "3",
		"controlled.shutdown.retry.backoff.ms": "5000",
	})
	ctrl := waitClusterFormed(t, bs, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	t.Run("CreateTopicsAnswersWhenMetadataShowsIt", func(t *testing.T) {
		for i, b := range bs {
			topic := fmt.Sprintf("ready-%d", i)
			id := createAndCheckReady(t, b, topic, 3, 2)
			leaders := leadersOf(t, b, topic)
			if b.ID == ctrl {
				// Clients send CreateTopics to the controller, which
				// updates its own metadata last: every other broker
				// shows the topic by the time it answers.
				for _, o := range bs {
					if got := leadersOf(t, o, topic); !slices.Equal(got, leaders) {
						t.Errorf("right after the controller created %s, broker %d shows leaders %v, the controller %v", topic, o.ID, got, leaders)
					}
				}
			}
			// The others show the same leaders once they know the topic,
			// and converge.
			waitFor(t, 30*time.Second, "every broker's metadata of "+topic, func() (bool, error) {
				for _, o := range bs {
					m, err := metadata(o.Addr(), topic)
					if err != nil {
						return false, err
					}
					mt := m.Topics[0]
					if mt.ErrorCode != 0 {
						if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code && mt.ErrorCode != kerr.LeaderNotAvailable.Code {
							t.Fatalf("broker %d answers %s with error %d", o.ID, topic, mt.ErrorCode)
						}
						return false, fmt.Errorf("broker %d: error %d", o.ID, mt.ErrorCode)
					}
					if mt.TopicID != id || !slices.Equal(partitionLeaders(mt.Partitions), leaders) {
						t.Fatalf("broker %d shows %s as id %x leaders %v; the creating broker %x %v", o.ID, topic, mt.TopicID, partitionLeaders(mt.Partitions), id, leaders)
					}
				}
				return true, nil
			})
		}
	})

	// rf1 has one partition with one replica; leader is its broker.
	createAndCheckReady(t, bs[0], "rf1", 1, 1)
	leader := byID(bs, leadersOf(t, bs[0], "rf1")[0])
	var others []*BrokerProc
	for _, b := range bs {
		if b != leader {
			others = append(others, b)
		}
	}
	t.Logf("rf1's only replica is on broker %d", leader.ID)
	const n = 20
	produceValues(ctx, t, bs, "rf1", 0, n)

	t.Run("GroupsWhoseCoordinatorHostsNoReplica", func(t *testing.T) {
		groups := groupsCoordinatedAwayFrom(t, bs, leader.ID, len(bs)+1)
		for i, b := range bs {
			g := groups[i]
			consumeAsGroup(ctx, t, []string{b.Addr()}, g, "rf1", n)
			checkCommitted(ctx, t, others[i%len(others)], g, "rf1", n)
		}
		// A KIP-848 group: the coordinator assigns the partition from the
		// cluster's metadata.
		g := groups[len(bs)]
		consumeAsGroup(ctx, t, []string{others[0].Addr()}, g, "rf1", n, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
		checkCommitted(ctx, t, others[1], g, "rf1", n)
	})

	t.Run("TopicConfigsThroughBrokerWithNoReplica", func(t *testing.T) {
		alterTopicConfigAt(t, others[0], "rf1", "max.message.bytes", kmsg.StringPtr("200"))
		if v := topicConfigAt(t, others[1], "rf1", "max.message.bytes"); v != "200" {
			t.Fatalf("broker %d describes max.message.bytes=%q, want 200", others[1].ID, v)
		}
		// The leader applies it from the /config/changes notification.
		cl, err := kgo.NewClient(kgo.SeedBrokers(leader.Addr()), kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		waitFor(t, 30*time.Second, "the leader refusing a record over the new max.message.bytes", func() (bool, error) {
			big := make([]byte, 1000)
			rand.Read(big) // franz-go compresses: zeros would fit
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: "rf1", Value: big}).FirstErr()
			if errors.Is(err, kerr.MessageTooLarge) {
				return true, nil
			}
			return false, fmt.Errorf("produce: %v", err)
		})
		alterTopicConfigAt(t, others[2], "rf1", "max.message.bytes", nil)
		if v := topicConfigAt(t, leader, "rf1", "max.message.bytes"); v == "200" {
			t.Fatalf("broker %d still describes max.message.bytes=200 after its override was deleted", leader.ID)
		}
	})

	t.Run("ReplicaLocalAnswersFromBrokerWithNoReplica", func(t *testing.T) {
		b := others[0]
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version = 7
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "rf1"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		dp := kmsg.NewPtrDescribeProducersRequest()
		dt := kmsg.NewDescribeProducersRequestTopic()
		dt.Topic, dt.Partitions = "rf1", []int32{0}
		dp.Topics = append(dp.Topics, dt)
		dr := kmsg.NewPtrDeleteRecordsRequest()
		drt := kmsg.NewDeleteRecordsRequestTopic()
		drt.Topic = "rf1"
		drt.Partitions = append(drt.Partitions, kmsg.DeleteRecordsRequestTopicPartition{Partition: 0, Offset: 1})
		dr.Topics = append(dr.Topics, drt)
		codes := map[string]int16{}
		for name, req := range map[string]kmsg.Request{"ListOffsets": lo, "DescribeProducers": dp, "DeleteRecords": dr} {
			r, err := send(b.Addr(), req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			switch r := r.(type) {
			case *kmsg.ListOffsetsResponse:
				codes[name] = r.Topics[0].Partitions[0].ErrorCode
			case *kmsg.DescribeProducersResponse:
				codes[name] = r.Topics[0].Partitions[0].ErrorCode
			case *kmsg.DeleteRecordsResponse:
				codes[name] = r.Topics[0].Partitions[0].ErrorCode
			}
		}
		for name, code := range codes {
			if code != kerr.NotLeaderForPartition.Code {
				t.Errorf("%s of rf1 on broker %d (no replica): error %d, want NOT_LEADER_OR_FOLLOWER", name, b.ID, code)
			}
		}
	})

	t.Run("DescribeTopicPartitionsFromMetadata", func(t *testing.T) {
		// Kafka 4's kafka-topics --describe asks this; every broker
		// answers from the cluster's metadata.
		for _, b := range bs {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = "rf1"
			req.Topics = append(req.Topics, rt)
			r, err := send(b.Addr(), req)
			if err != nil {
				t.Fatal(err)
			}
			ts := r.(*kmsg.DescribeTopicPartitionsResponse).Topics
			if len(ts) != 1 || ts[0].ErrorCode != 0 || len(ts[0].Partitions) != 1 {
				t.Fatalf("DescribeTopicPartitions of rf1 on broker %d: %+v", b.ID, ts)
			}
			p := ts[0].Partitions[0]
			if p.LeaderID != leader.ID || !slices.Equal(p.Replicas, []int32{leader.ID}) || !slices.Equal(p.ISR, []int32{leader.ID}) {
				t.Errorf("DescribeTopicPartitions of rf1 on broker %d: leader %d replicas %v ISR %v, want broker %d alone", b.ID, p.LeaderID, p.Replicas, p.ISR, leader.ID)
			}
		}
	})

	t.Run("ManualAssignments", func(t *testing.T) {
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.Version = 7
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "manual", -1, -1
		rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 1, Replicas: []int32{3, 4}}, {Partition: 0, Replicas: []int32{5, 1}}}
		ct.Topics = append(ct.Topics, rt)
		r, err := send(bs[1].Addr(), ct)
		if err != nil || r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
			t.Fatalf("CreateTopics with an unordered assignment: %+v %v", r, err)
		}
		want := map[int32][]int32{0: {5, 1}, 1: {3, 4}}
		checkReplicas(t, bs[1], "manual", want)

		cp := kmsg.NewPtrCreatePartitionsRequest()
		cpt := kmsg.NewCreatePartitionsRequestTopic()
		cpt.Topic, cpt.Count = "manual", 3
		cpt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{2, 3}}}
		cp.Topics = append(cp.Topics, cpt)
		pr, err := send(bs[2].Addr(), cp)
		if err != nil || pr.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode != 0 {
			t.Fatalf("CreatePartitions with an assignment: %+v %v", pr, err)
		}
		want[2] = []int32{2, 3}
		checkReplicas(t, bs[2], "manual", want)

		for _, c := range []struct {
			replicas []int32
			msg      string
		}{
			{[]int32{2, 2}, "Duplicate brokers not allowed in replica assignment: 2, 2 for partition id 3."},
			{[]int32{2, 42}, "Unknown broker(s) in replica assignment: 42."},
			{[]int32{2}, "Inconsistent replication factor between partitions, partition 0 has 2 while partitions [3] have replication factors [1], respectively."},
		} {
			cpt.Count, cpt.Assignment = 4, []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: c.replicas}}
			cp.Topics = []kmsg.CreatePartitionsRequestTopic{cpt}
			pr, err := send(bs[2].Addr(), cp)
			if err != nil {
				t.Fatal(err)
			}
			st := pr.(*kmsg.CreatePartitionsResponse).Topics[0]
			if st.ErrorCode != kerr.InvalidReplicaAssignment.Code || st.ErrorMessage == nil || *st.ErrorMessage != c.msg {
				t.Errorf("CreatePartitions with replicas %v: error %d %v, want INVALID_REPLICA_ASSIGNMENT %q", c.replicas, st.ErrorCode, st.ErrorMessage, c.msg)
			}
		}
	})

	t.Run("CreateTimesOutWithoutLeader", func(t *testing.T) {
		// Kafka 3.9 takes an assignment naming a broker that is not
		// registered; the partition gets no leader, and the request
		// answers REQUEST_TIMED_OUT when its timeout runs out.
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.Version, ct.TimeoutMillis = 7, 1000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "leaderless", -1, -1
		rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{42}}}
		ct.Topics = append(ct.Topics, rt)
		r, err := send(bs[3].Addr(), ct)
		if err != nil {
			t.Fatal(err)
		}
		st := r.(*kmsg.CreateTopicsResponse).Topics[0]
		if st.ErrorCode != kerr.RequestTimedOut.Code || st.NumPartitions != -1 {
			t.Fatalf("CreateTopics of a partition on an unknown broker: %+v, want REQUEST_TIMED_OUT", st)
		}
	})

	t.Run("DeleteTopicsAnswersWhenMetadataDropsIt", func(t *testing.T) {
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.Version = 6
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr("ready-0")
		dt.Topics = append(dt.Topics, rt)
		r, err := send(bs[2].Addr(), dt)
		if err != nil || r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode != 0 {
			t.Fatalf("DeleteTopics: %+v %v", r, err)
		}
		m, err := metadata(bs[2].Addr(), "ready-0")
		if err != nil {
			t.Fatal(err)
		}
		if c := m.Topics[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("right after DeleteTopics the broker's metadata answers ready-0 with error %d, want UNKNOWN_TOPIC_OR_PARTITION", c)
		}
	})

	// asked is the broker the next subtest asks the controller to shut
	// down; CleanStopOfWholeCluster stops it first.
	var asked *BrokerProc
	t.Run("ControlledShutdownAnswersWhenEveryBrokerShowsTheMoves", func(t *testing.T) {
		// The controller answers a ControlledShutdown once the moved
		// leaderships reached every live broker, the stopping one
		// included: a client asking any broker for metadata right after
		// is told the new leaders. The stopping broker is the first that
		// CleanStopOfWholeCluster stops (a broker asked to shut down is
		// elected leader nowhere until it dies, as in Kafka).
		const topic = "moves"
		var ctrlProc *BrokerProc
		for _, b := range bs {
			if b.ID == ctrl {
				ctrlProc = b
			}
		}
		x := bs[0]
		if x == ctrlProc {
			x = bs[1]
		}
		asked = x
		createAndCheckReady(t, ctrlProc, topic, 600, 3)
		waitFor(t, 30*time.Second, fmt.Sprintf("broker %d to lead partitions of %s", x.ID, topic), func() (bool, error) {
			ps, err := partitionsOf(x.Addr(), topic) // UNKNOWN_TOPIC_OR_PARTITION until x learns the topic
			return err == nil && slices.Contains(partitionLeaders(ps), x.ID), err
		})
		zc := dial(t, z.Addr+ClusterChroot)
		_, st, err := zc.Get(zkdata.BrokerPath(x.ID))
		if err != nil {
			t.Fatal(err)
		}
		cs := kmsg.NewPtrControlledShutdownRequest()
		cs.Version, cs.BrokerID, cs.BrokerEpoch = 3, x.ID, st.Czxid
		r, err := send(ctrlProc.Addr(), cs)
		if err != nil {
			t.Fatal(err)
		}
		if cr := r.(*kmsg.ControlledShutdownResponse); cr.ErrorCode != 0 || len(cr.PartitionsRemaining) != 0 {
			t.Fatalf("ControlledShutdown of broker %d: error %d, %d partitions remaining", x.ID, cr.ErrorCode, len(cr.PartitionsRemaining))
		}
		for _, b := range bs {
			for p, l := range leadersOf(t, b, topic) {
				if l == x.ID {
					t.Errorf("right after broker %d's controlled shutdown, broker %d's metadata still names it leader of %s-%d", x.ID, b.ID, topic, p)
					break
				}
			}
		}
	})

	t.Run("CleanStopOfWholeCluster", func(t *testing.T) {
		// The broker already asked to shut down goes first, as it would
		// after its ControlledShutdown: until it dies the controller
		// elects it nowhere, so a broker stopped before it could not hand
		// it a partition the two alone replicate (Kafka's controller
		// keeps it in shuttingDownBrokerIds the same way).
		order := slices.Clone(bs)
		if i := slices.Index(order, asked); i > 0 {
			order = append(append([]*BrokerProc{asked}, order[:i]...), order[i+1:]...)
		}
		for _, b := range order {
			if err := b.Term(90 * time.Second); err != nil {
				t.Fatalf("SIGTERM broker %d: %v", b.ID, err)
			}
			if log := b.Log(); strings.Contains(log, "controlled shutdown did not complete") {
				t.Errorf("broker %d gave up its controlled shutdown:\n%s", b.ID, tail([]byte(log), 4000))
			}
		}
	})
}

// createAndCheckReady creates topic through b and checks that b's
// metadata, read right after the answer, shows a leader for every
// partition; it returns the topic's id.
func createAndCheckReady(t *testing.T, b *BrokerProc, topic string, partitions int32, rf int16) [16]byte {
	t.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	ct.Topics = append(ct.Topics, rt)
	r, err := send(b.Addr(), ct)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	st := r.(*kmsg.CreateTopicsResponse).Topics[0]
	if st.ErrorCode != 0 {
		t.Fatalf("CreateTopics %s through broker %d: %+v", topic, b.ID, st)
	}
	m, err := metadata(b.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	mt := m.Topics[0]
	if mt.ErrorCode != 0 || len(mt.Partitions) != int(partitions) || mt.TopicID != st.TopicID {
		t.Fatalf("right after CreateTopics broker %d's metadata of %s: error %d, %d partitions, id %x (created %x)", b.ID, topic, mt.ErrorCode, len(mt.Partitions), mt.TopicID, st.TopicID)
	}
	for _, p := range mt.Partitions {
		if p.ErrorCode != 0 || p.Leader < 0 || len(p.Replicas) != int(rf) {
			t.Fatalf("right after CreateTopics broker %d's metadata of %s-%d: %+v", b.ID, topic, p.Partition, p)
		}
	}
	return st.TopicID
}

// leadersOf returns the leaders of topic's partitions, by partition, as b's
// metadata shows them.
func leadersOf(t *testing.T, b *BrokerProc, topic string) []int32 {
	t.Helper()
	ps, err := partitionsOf(b.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return partitionLeaders(ps)
}

func partitionLeaders(ps []kmsg.MetadataResponseTopicPartition) []int32 {
	out := make([]int32, len(ps))
	for _, p := range ps {
		if int(p.Partition) < len(out) {
			out[p.Partition] = p.Leader
		}
	}
	return out
}

// checkReplicas checks b's metadata of topic, read at once: each partition
// has the given replicas (in order) and a leader.
func checkReplicas(t *testing.T, b *BrokerProc, topic string, want map[int32][]int32) {
	t.Helper()
	ps, err := partitionsOf(b.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32][]int32{}
	for _, p := range ps {
		if p.Leader < 0 {
			t.Errorf("%s-%d has no leader on broker %d", topic, p.Partition, b.ID)
		}
		got[p.Partition] = p.Replicas
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s's replicas on broker %d: %v, want %v", topic, b.ID, got, want)
	}
}

// groupsCoordinatedAwayFrom returns n group names whose coordinator is not
// broker avoid.
func groupsCoordinatedAwayFrom(t *testing.T, bs []*BrokerProc, avoid int32, n int) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n && i < 1000; i++ {
		g := fmt.Sprintf("away-%d", i)
		var node int32
		waitFor(t, 30*time.Second, "the coordinator of "+g, func() (bool, error) {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKey = g
			r, err := send(bs[0].Addr(), fc)
			if err != nil {
				return false, err
			}
			fr := r.(*kmsg.FindCoordinatorResponse)
			node = fr.NodeID
			return fr.ErrorCode == 0, kerr.ErrorForCode(fr.ErrorCode)
		})
		if node != avoid {
			out = append(out, g)
		}
	}
	if len(out) < n {
		t.Fatalf("found %d groups coordinated away from broker %d, want %d", len(out), avoid, n)
	}
	return out
}

// produceValues produces the values from..to-1 to topic and waits for them.
func produceValues(ctx context.Context, t *testing.T, bs []*BrokerProc, topic string, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

// consumeAsGroup reads want records of topic as a member of group,
// bootstrapped from seeds only, and commits them.
func consumeAsGroup(ctx context.Context, t *testing.T, seeds []string, group, topic string, want int, opts ...kgo.GroupOpt) {
	t.Helper()
	kopts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}
	for _, o := range opts {
		kopts = append(kopts, o)
	}
	c, err := kgo.NewClient(kopts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pctx, pcancel := context.WithTimeout(ctx, 45*time.Second)
	defer pcancel()
	got := 0
	for got < want {
		fs := c.PollFetches(pctx)
		if pctx.Err() != nil {
			t.Fatalf("group %s (seed %v) read %d of %d records of %s", group, seeds, got, want, topic)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("group %s fetch %s/%d: %v", group, topic, p, err) })
		got += fs.NumRecords()
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("group %s commit: %v", group, err)
	}
}

// checkCommitted checks through b that group committed want on topic's
// partition 0.
func checkCommitted(ctx context.Context, t *testing.T, b *BrokerProc, group, topic string, want int64) {
	t.Helper()
	offs, err := kadmClient(t, b.Addr()).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("OffsetFetch of %s through broker %d: %v", group, b.ID, err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil || o.At != want {
		t.Fatalf("group %s committed %+v on %s-0 (through broker %d), want %d", group, o, topic, b.ID, want)
	}
}

// topicConfigAt describes one config of topic through b.
func topicConfigAt(t *testing.T, b *BrokerProc, topic, name string) string {
	t.Helper()
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 4
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	dc.Resources = append(dc.Resources, rr)
	r, err := send(b.Addr(), dc)
	if err != nil {
		t.Fatal(err)
	}
	res := r.(*kmsg.DescribeConfigsResponse).Resources[0]
	if res.ErrorCode != 0 || len(res.Configs) != 1 {
		t.Fatalf("DescribeConfigs of %s through broker %d: %+v", topic, b.ID, res)
	}
	return *res.Configs[0].Value
}

// alterTopicConfigAt sets (value nil: deletes) one config of topic through
// b with IncrementalAlterConfigs.
func alterTopicConfigAt(t *testing.T, b *BrokerProc, topic, name string, value *string) {
	t.Helper()
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.Version = 1
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = name, value, kmsg.IncrementalAlterConfigOpSet
	if value == nil {
		c.Op = kmsg.IncrementalAlterConfigOpDelete
	}
	rr.Configs = append(rr.Configs, c)
	ia.Resources = append(ia.Resources, rr)
	r, err := send(b.Addr(), ia)
	if err != nil {
		t.Fatal(err)
	}
	if res := r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; res.ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs of %s through broker %d: error %d %v", topic, b.ID, res.ErrorCode, res.ErrorMessage)
	}
}

// kadmClient is an admin client bootstrapped from addr alone, closed when
// the test ends.
func kadmClient(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
