package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeCluster(addr string) (*kmsg.DescribeClusterResponse, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 1, 1
	resp, err := send(addr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.DescribeClusterResponse), nil
}

// waitClusterFormed waits until every broker's cache lists want live
// brokers and all name the same controller, and returns that controller.
func waitClusterFormed(t testing.TB, bs []*BrokerProc, want int) int32 {
	t.Helper()
	var ctrl int32 = -1
	waitFor(t, 60*time.Second, fmt.Sprintf("%d live brokers in every cache", want), func() (bool, error) {
		ctrl = -1
		for _, b := range bs {
			if !b.Running() {
				continue
			}
			r, err := describeCluster(b.Addr())
			if err != nil {
				return false, err
			}
			if len(r.Brokers) != want || r.ControllerID < 0 || (ctrl >= 0 && r.ControllerID != ctrl) {
				return false, fmt.Errorf("broker %d sees %d brokers, controller %d", b.ID, len(r.Brokers), r.ControllerID)
			}
			ctrl = r.ControllerID
		}
		return true, nil
	})
	return ctrl
}

// partitionsOf reads one topic's partitions from a broker's cache.
func partitionsOf(addr, topic string) ([]kmsg.MetadataResponseTopicPartition, error) {
	m, err := metadata(addr, topic)
	if err != nil {
		return nil, err
	}
	if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 {
		return nil, fmt.Errorf("topic %s: %+v", topic, m.Topics)
	}
	return m.Topics[0].Partitions, nil
}

func byID(bs []*BrokerProc, id int32) *BrokerProc {
	for _, b := range bs {
		if b.ID == id {
			return b
		}
	}
	return nil
}

// TestBrokerProcessesFormCluster runs three kbroker processes on one real
// ZooKeeper and checks the broker side of cluster mode end to end: the
// brokers register and elect one controller; every broker's metadata cache
// (fed by UpdateMetadata) lists all of them; a topic created through any
// broker gets RF=3 replicas, leaders and ISR in every cache; the
// inter-broker APIs are advertised; Produce to a non-leader answers
// NOT_LEADER_OR_FOLLOWER with the current leader's hint; share groups and
// the share coordinator RPCs are advertised; ElectLeaders and
// ControlledShutdown are controller-only; a SIGTERM bounce runs a
// controlled shutdown that moves every leadership away before the process
// exits 0, and the broker rejoins; a deleted topic leaves every cache.
func TestBrokerProcessesFormCluster(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3", "http.listeners": "http://127.0.0.1:0", "schema.registry.listeners": ""})
	ctrl := waitClusterFormed(t, bs, 3)
	t.Logf("controller: broker %d", ctrl)
	checkDynamicDefaultPropagates(t, bs) // ops_test.go

	// ZooKeeper-mode brokers advertise the inter-broker APIs.
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 2 // v3+ answers with a v0 header that RoundTrip does not expect
	resp, err := send(bs[0].Addr(), av)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[int16]bool{}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		keys[k.ApiKey] = true
	}
	for _, k := range []kmsg.Key{kmsg.LeaderAndISR, kmsg.StopReplica, kmsg.UpdateMetadata, kmsg.ControlledShutdown} {
		if !keys[int16(k)] {
			t.Errorf("ApiVersions does not advertise %s", kmsg.NameForKey(int16(k)))
		}
	}
	// Share groups work on a cluster (Kafka's split, share_test.go): the
	// client APIs and the share coordinator's RPCs are advertised.
	for _, k := range []kmsg.Key{kmsg.ShareGroupHeartbeat, kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.DescribeShareGroupOffsets,
		kmsg.ReadShareGroupState, kmsg.WriteShareGroupState} {
		if !keys[int16(k)] {
			t.Errorf("ApiVersions does not advertise %s", kmsg.NameForKey(int16(k)))
		}
	}

	// Controller requests from a deposed controller or for an earlier
	// registration of the broker are fenced.
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 8, 99, 0, -1
	if r, err := send(bs[0].Addr(), um); err != nil || r.(*kmsg.UpdateMetadataResponse).ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Errorf("UpdateMetadata from controller epoch 0: %+v %v; want STALE_CONTROLLER_EPOCH", r, err)
	}
	sr := kmsg.NewPtrStopReplicaRequest()
	sr.Version, sr.ControllerID, sr.ControllerEpoch, sr.BrokerEpoch = 4, ctrl, 1<<30, 1
	if r, err := send(bs[0].Addr(), sr); err != nil || r.(*kmsg.StopReplicaResponse).ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("StopReplica for broker epoch 1: %+v %v; want STALE_BROKER_EPOCH", r, err)
	}

	// Create through a broker; every cache learns leaders and ISR.
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "events", 3, 3
	ct.Topics = append(ct.Topics, rt)
	cresp, err := send(bs[1].Addr(), ct)
	if err != nil {
		t.Fatal(err)
	}
	if c := cresp.(*kmsg.CreateTopicsResponse).Topics[0]; c.ErrorCode != 0 || c.ReplicationFactor != 3 {
		t.Fatalf("CreateTopics: %+v", c)
	}
	var leaders map[int32]int32
	waitFor(t, 30*time.Second, "the topic's leaders and ISR in every cache", func() (bool, error) {
		leaders = map[int32]int32{}
		for _, b := range bs {
			ps, err := partitionsOf(b.Addr(), "events")
			if err != nil {
				return false, err
			}
			if len(ps) != 3 {
				return false, fmt.Errorf("broker %d: %d partitions", b.ID, len(ps))
			}
			for _, p := range ps {
				if p.ErrorCode != 0 || p.Leader < 1 || len(p.Replicas) != 3 || len(p.ISR) != 3 {
					return false, fmt.Errorf("broker %d: partition %+v", b.ID, p)
				}
				if l, ok := leaders[p.Partition]; ok && l != p.Leader {
					return false, fmt.Errorf("brokers disagree on the leader of %d", p.Partition)
				}
				leaders[p.Partition] = p.Leader
			}
		}
		return true, nil
	})
	checkControllerMetrics(t, bs, ctrl, 3) // ops_test.go
	// Every broker leads one partition: replicas are spread round-robin.
	led := map[int32]int{}
	for _, l := range leaders {
		led[l]++
	}
	if len(led) != 3 {
		t.Errorf("leaders %v: want one partition led by each broker", leaders)
	}

	// Produce to a non-leader: NOT_LEADER_OR_FOLLOWER with the hint.
	leader0 := leaders[0]
	var other *BrokerProc
	for _, b := range bs {
		if b.ID != leader0 {
			other = b
			break
		}
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.Version, pr.Acks, pr.TimeoutMillis = 11, 1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "events"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = 0
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	presp, err := send(other.Addr(), pr)
	if err != nil {
		t.Fatal(err)
	}
	prr := presp.(*kmsg.ProduceResponse)
	p0 := prr.Topics[0].Partitions[0]
	if p0.ErrorCode != kerr.NotLeaderForPartition.Code || p0.CurrentLeader.LeaderID != leader0 {
		t.Errorf("produce to non-leader %d: error %d, current leader %+v; want NOT_LEADER_OR_FOLLOWER naming %d", other.ID, p0.ErrorCode, p0.CurrentLeader, leader0)
	}
	if len(prr.Brokers) != 1 || prr.Brokers[0].NodeID != leader0 || prr.Brokers[0].Port != int32(byID(bs, leader0).Port) {
		t.Errorf("produce node endpoints %+v: want broker %d at port %d", prr.Brokers, leader0, byID(bs, leader0).Port)
	}

	// Controller-only requests elsewhere: NOT_CONTROLLER.
	var standby *BrokerProc
	for _, b := range bs {
		if b.ID != ctrl {
			standby = b
			break
		}
	}
	cs := kmsg.NewPtrControlledShutdownRequest()
	cs.Version, cs.BrokerID, cs.BrokerEpoch = 3, standby.ID, -1
	if r, err := send(standby.Addr(), cs); err != nil || r.(*kmsg.ControlledShutdownResponse).ErrorCode != kerr.NotController.Code {
		t.Errorf("ControlledShutdown on a standby: %+v %v; want NOT_CONTROLLER", r, err)
	}
	el := kmsg.NewPtrElectLeadersRequest()
	el.Version, el.ElectionType, el.TimeoutMillis = 2, 0, 5000
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "events", []int32{0, 1, 2}
	el.Topics = append(el.Topics, et)
	if r, err := send(standby.Addr(), el); err != nil || r.(*kmsg.ElectLeadersResponse).ErrorCode != kerr.NotController.Code {
		t.Errorf("ElectLeaders on a standby: %+v %v; want NOT_CONTROLLER", r, err)
	}
	r, err := send(byID(bs, ctrl).Addr(), el)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.(*kmsg.ElectLeadersResponse).Topics[0].Partitions {
		if p.ErrorCode != kerr.ElectionNotNeeded.Code {
			t.Errorf("preferred election of a partition led by its preferred replica: %+v", p)
		}
	}

	// SIGTERM bounce: a controlled shutdown moves leadership off first.
	victim := byID(bs, leader0)
	start := time.Now()
	if err := victim.Term(60 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	t.Logf("broker %d stopped %v after SIGTERM", victim.ID, time.Since(start))
	if !strings.Contains(victim.Log(), "controlled shutdown complete") {
		t.Errorf("broker %d stopped without a controlled shutdown", victim.ID)
	}
	var live []*BrokerProc
	for _, b := range bs {
		if b != victim {
			live = append(live, b)
		}
	}
	waitClusterFormed(t, live, 2)
	waitFor(t, 30*time.Second, "leadership off the stopped broker in every cache", func() (bool, error) {
		for _, b := range live {
			ps, err := partitionsOf(b.Addr(), "events")
			if err != nil {
				return false, err
			}
			for _, p := range ps {
				if p.Leader == victim.ID || p.Leader < 0 || slicesContains(p.ISR, victim.ID) || !slicesContains(p.OfflineReplicas, victim.ID) {
					return false, fmt.Errorf("broker %d: %+v", b.ID, p)
				}
			}
		}
		return true, nil
	})
	victim.Restart()
	waitClusterFormed(t, bs, 3)

	// Deletion through any broker leaves every cache.
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version = 6
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = kmsg.StringPtr("events")
	dt.Topics = append(dt.Topics, dtt)
	dresp, err := send(bs[2].Addr(), dt)
	if err != nil {
		t.Fatal(err)
	}
	if d := dresp.(*kmsg.DeleteTopicsResponse).Topics[0]; d.ErrorCode != 0 {
		t.Fatalf("DeleteTopics: %+v", d)
	}
	waitFor(t, 30*time.Second, "the deleted topic gone from every cache", func() (bool, error) {
		for _, b := range bs {
			m, err := metadata(b.Addr(), "events")
			if err != nil {
				return false, err
			}
			if c := m.Topics[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
				return false, fmt.Errorf("broker %d: error %d", b.ID, c)
			}
		}
		return true, nil
	})
}
