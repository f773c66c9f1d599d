package controller

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestReassignment(t *testing.T) {
	m, zk := cluster(t, 4)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2, 3}})
	failed, out, err := m.OnReassign(map[TopicPartition][]int32{tp("t", 0): {4, 2, 3}})
	if err != nil || len(failed) != 0 {
		t.Fatal(failed, err)
	}
	// Started: RS = TRS ∪ ORS in the topic znode, epoch bumped, every
	// replica (the new one too) told.
	a := zk.topics["t"]
	if !reflect.DeepEqual(a.Partitions[0], []int32{4, 2, 3, 1}) || !reflect.DeepEqual(a.AddingReplicas[0], []int32{4}) ||
		!reflect.DeepEqual(a.RemovingReplicas[0], []int32{1}) {
		t.Fatalf("assignment during reassignment %+v", a)
	}
	expectState(t, zk, m, tp("t", 0), 1, 1, 1, 2, 3)
	d := describe(out.Sends)
	if len(d) != 8 || !strings.HasPrefix(d[6], "4:LeaderAndIsr t-0(1/1/[1 2 3])") {
		t.Fatalf("sends %v", d)
	}
	lair := out.Sends[6].Req.(*kmsg.LeaderAndISRRequest)
	if p := lair.TopicStates[0].PartitionStates[0]; !reflect.DeepEqual(p.AddingReplicas, []int32{4}) || !reflect.DeepEqual(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("LeaderAndIsr adding %v removing %v", p.AddingReplicas, p.RemovingReplicas)
	}
	if r := m.Ctx.Reassignments(); len(r) != 1 {
		t.Fatalf("reassignments %v", r)
	}
	// An ISR change that does not cover the target changes nothing more.
	if out, err = m.OnISRChange([]TopicPartition{tp("t", 0)}); err != nil || zk.topics["t"].AddingReplicas[0] == nil {
		t.Fatal("finished early", err)
	}
	// The new replica caught up: leadership moves into the target, the
	// removed replica leaves the ISR and deletes its log.
	st := zk.states[tp("t", 0)]
	st.ISR, st.ZkVersion = []int32{1, 2, 3, 4}, st.ZkVersion+1
	zk.states[tp("t", 0)] = st
	out, err = m.OnISRChange([]TopicPartition{tp("t", 0)})
	if err != nil {
		t.Fatal(err)
	}
	expectState(t, zk, m, tp("t", 0), 4, 3, 2, 3, 4)
	a = zk.topics["t"]
	if !reflect.DeepEqual(a.Partitions[0], []int32{4, 2, 3}) || len(a.AddingReplicas) != 0 || len(a.RemovingReplicas) != 0 {
		t.Fatalf("assignment after %+v", a)
	}
	found := false
	for _, line := range describe(out.Sends) {
		if line == "1:StopReplica t-0(delete=true)" {
			found = true
		}
	}
	if !found || len(m.Ctx.Reassignments()) != 0 {
		t.Fatalf("sends %v", describe(out.Sends))
	}
}

func TestReassignmentCancelAndValidation(t *testing.T) {
	m, zk := cluster(t, 4)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2}})
	if _, _, err := m.OnReassign(map[TopicPartition][]int32{tp("t", 0): {3, 2}}); err != nil {
		t.Fatal(err)
	}
	// 3 joined the ISR but the reassignment is cancelled (target = origin).
	st := zk.states[tp("t", 0)]
	st.ISR, st.ZkVersion = []int32{1, 2, 3}, st.ZkVersion+1
	zk.states[tp("t", 0)] = st
	m.Ctx.States[tp("t", 0)] = st
	failed, out, err := m.OnReassign(map[TopicPartition][]int32{tp("t", 0): {1, 2}})
	if err != nil || len(failed) != 0 {
		t.Fatal(failed, err)
	}
	a := zk.topics["t"]
	if !reflect.DeepEqual(a.Partitions[0], []int32{1, 2}) || len(a.AddingReplicas) != 0 {
		t.Fatalf("after cancel %+v", a)
	}
	if got := zk.states[tp("t", 0)].ISR; !reflect.DeepEqual(got, []int32{1, 2}) {
		t.Fatalf("ISR after cancel %v", got)
	}
	if d := describe(out.Sends); !contains2(d, "3:StopReplica t-0(delete=true)") {
		t.Fatalf("sends %v", d)
	}
	// Validation.
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{1: broker(1, 101), 2: broker(2, 102), 3: broker(3, 103)}); err != nil {
		t.Fatal(err)
	}
	failed, _, _ = m.OnReassign(map[TopicPartition][]int32{
		tp("t", 0): {4, 1}, tp("t", 1): {1}, tp("x", 0): {1},
	})
	if !errors.Is(failed[tp("t", 0)], kerr.InvalidReplicaAssignment) ||
		!errors.Is(failed[tp("t", 1)], kerr.UnknownTopicOrPartition) || !errors.Is(failed[tp("x", 0)], kerr.UnknownTopicOrPartition) {
		t.Fatalf("failed %v", failed)
	}
	failed, _, _ = m.OnReassign(map[TopicPartition][]int32{tp("t", 0): {1, 1}})
	if !errors.Is(failed[tp("t", 0)], kerr.InvalidReplicaAssignment) {
		t.Fatalf("duplicate replica: %v", failed)
	}
}

func contains2(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}
