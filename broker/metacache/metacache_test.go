package metacache

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func update(version int16, brokers []int32, topic string, id byte, parts ...kmsg.UpdateMetadataRequestTopicPartition) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = version
	req.ControllerID = brokers[0]
	for _, b := range brokers {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = b
		lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{
			{Host: "127.0.0.1", Port: 9000 + b, ListenerName: "PLAINTEXT"},
			{Host: "127.0.0.1", Port: 9100 + b, ListenerName: "CLIENT", SecurityProtocol: 2},
		}
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	if topic != "" {
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID[0] = topic, id
		ts.PartitionStates = parts
		req.TopicStates = append(req.TopicStates, ts)
	}
	return req
}

func part(p, leader, epoch int32, isr ...int32) kmsg.UpdateMetadataRequestTopicPartition {
	return kmsg.UpdateMetadataRequestTopicPartition{Partition: p, Leader: leader, LeaderEpoch: epoch, ISR: isr, Replicas: []int32{1, 2, 3}}
}

func TestApplyReplacesBrokersAndMergesPartitions(t *testing.T) {
	c := New()
	if s := c.Snapshot(); s.ControllerID != -1 || len(s.Brokers) != 0 {
		t.Fatalf("empty cache: %+v", s)
	}
	c.Apply(update(8, []int32{1, 2, 3}, "t", 7, part(0, 1, 0, 1, 2, 3), part(1, 2, 0, 2, 3, 1)))
	before := c.Snapshot()
	c.Apply(update(8, []int32{2, 3}, "t", 7, part(0, 2, 1, 2, 3)))
	s := c.Snapshot()
	if got := s.BrokerIDs(); !reflect.DeepEqual(got, []int32{2, 3}) {
		t.Fatalf("live brokers %v, want [2 3]", got)
	}
	if p, _ := s.Partition("t", 0); p.Leader != 2 || p.LeaderEpoch != 1 || !reflect.DeepEqual(p.ISR, []int32{2, 3}) {
		t.Fatalf("t-0 = %+v", p)
	}
	if p, ok := s.Partition("t", 1); !ok || p.Leader != 2 {
		t.Fatalf("t-1 not named by the update must keep its state: %+v %v", p, ok)
	}
	if p, _ := before.Partition("t", 0); p.Leader != 1 {
		t.Fatalf("an older snapshot changed: %+v", p)
	}
	if _, e, ok := s.LeaderEndpoint("t", 0, "CLIENT"); !ok || e.Port != 9102 {
		t.Fatalf("leader endpoint on CLIENT = %+v %v", e, ok)
	}
	if tp := s.TopicByID([16]byte{7}); tp == nil || tp.Name != "t" {
		t.Fatalf("by id: %+v", tp)
	}
	// A deleted topic's partitions leave; the topic goes with the last.
	c.Apply(update(8, []int32{2, 3}, "t", 7, part(0, LeaderDuringDelete, 1), part(1, LeaderDuringDelete, 0)))
	if s := c.Snapshot(); len(s.Topics) != 0 || s.TopicByID([16]byte{7}) != nil {
		t.Fatalf("deleted topic still cached: %v", s.TopicNames())
	}
}

func TestApplyOldVersions(t *testing.T) {
	c := New()
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = 2
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID = 5
	lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{{Host: "h", Port: 1, SecurityProtocol: 2}}
	req.LiveBrokers = append(req.LiveBrokers, lb)
	p := part(0, 5, 3, 5)
	p.Topic = "old"
	req.PartitionStates = append(req.PartitionStates, p)
	c.Apply(req)
	s := c.Snapshot()
	if _, e, ok := s.LeaderEndpoint("old", 0, "SASL_PLAINTEXT"); !ok || e.Host != "h" {
		t.Fatalf("v2 endpoint named after its protocol: %+v %v", e, ok)
	}
}

func TestApplyLeaderAndISR(t *testing.T) {
	c := New()
	p0 := part(0, 1, 3, 1, 2, 3)
	p0.OfflineReplicas = []int32{3}
	c.Apply(update(8, []int32{1, 2, 3}, "t", 7, p0, part(1, 2, 5, 2, 3, 1)))
	before := c.Snapshot()
	lai := func(topic string, id byte, ps ...kmsg.LeaderAndISRRequestTopicPartition) kmsg.LeaderAndISRRequestTopicState {
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID[0], ts.PartitionStates = topic, id, ps
		return ts
	}
	lp := func(p, leader, epoch int32, isr ...int32) kmsg.LeaderAndISRRequestTopicPartition {
		return kmsg.LeaderAndISRRequestTopicPartition{Partition: p, Leader: leader, LeaderEpoch: epoch, ISR: isr, Replicas: []int32{1, 2, 3}}
	}
	n := c.ApplyLeaderAndISR([]kmsg.LeaderAndISRRequestTopicState{
		lai("t", 7, lp(0, 2, 4, 2, 3), lp(1, 3, 5, 3), lp(9, 1, 9, 1)), // newer, same epoch, unknown partition
		lai("other", 1, lp(0, 1, 1, 1)),                                // a topic the cache does not hold
		lai("t", 8, lp(1, 3, 6, 3)),                                    // another topic id: a recreated topic
	})
	if n != 1 {
		t.Fatalf("changed %d partitions, want 1", n)
	}
	s := c.Snapshot()
	if s == before {
		t.Fatal("no new snapshot")
	}
	select {
	case <-before.Replaced():
	default:
		t.Fatal("the old snapshot's waiters were not woken")
	}
	if p, _ := s.Partition("t", 0); p.Leader != 2 || p.LeaderEpoch != 4 || !reflect.DeepEqual(p.ISR, []int32{2, 3}) || !reflect.DeepEqual(p.OfflineReplicas, []int32{3}) {
		t.Fatalf("t-0 = %+v, want leader 2 epoch 4 ISR [2 3], offline replicas kept", p)
	}
	if p, _ := s.Partition("t", 1); p.Leader != 2 || p.LeaderEpoch != 5 {
		t.Fatalf("t-1 = %+v: a state of the same epoch must not change it", p)
	}
	if _, ok := s.Partition("t", 9); ok || s.Topics["other"] != nil {
		t.Fatal("LeaderAndIsr added a partition or topic the cache did not hold")
	}
	if p, _ := before.Partition("t", 0); p.Leader != 1 {
		t.Fatalf("an older snapshot changed: %+v", p)
	}
	if tp := s.TopicByID([16]byte{7}); tp == nil || tp.Partitions[0].Leader != 2 {
		t.Fatalf("by id: %+v", tp)
	}
	// An older epoch, then the UpdateMetadata of the same state.
	if n := c.ApplyLeaderAndISR([]kmsg.LeaderAndISRRequestTopicState{lai("t", 7, lp(0, 1, 3, 1))}); n != 0 || c.Snapshot() != s {
		t.Fatalf("an older epoch changed the cache (%d)", n)
	}
	c.Apply(update(8, []int32{1, 2, 3}, "t", 7, part(0, 2, 4, 2, 3)))
	if p, _ := c.Snapshot().Partition("t", 0); p.Leader != 2 || p.LeaderEpoch != 4 {
		t.Fatalf("after UpdateMetadata t-0 = %+v", p)
	}
}
