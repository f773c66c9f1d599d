package controller

import (
	"reflect"
	"testing"
)

func TestAutoRebalance(t *testing.T) {
	m, zk := cluster(t, 2)
	createTopic(t, m, "t", map[int32][]int32{0: {1, 2}, 1: {2, 1}, 2: {1, 2}, 3: {2, 1}})
	// Broker 1 bounces: broker 2 leads everything, 1 is back but not in the ISR.
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{2: broker(2, 102)}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.OnBrokerChange(map[int32]LiveBroker{1: broker(1, 201), 2: broker(2, 102)}); err != nil {
		t.Fatal(err)
	}
	want := map[int32][]TopicPartition{1: {tp("t", 0), tp("t", 2)}}
	if got := m.Ctx.ImbalancedPartitions(10); !reflect.DeepEqual(got, want) {
		t.Fatalf("imbalance %v", got)
	}
	if got := m.Ctx.ImbalancedPartitions(100); len(got) != 0 {
		t.Fatalf("at 100%% nothing is imbalanced: %v", got)
	}
	// Not in the ISR yet: nothing moves.
	if out, err := m.OnAutoRebalance(10); err != nil || len(out.Sends) != 0 {
		t.Fatalf("%v %v", describe(out.Sends), err)
	}
	// Broker 1 caught up on t-0 only.
	st := zk.states[tp("t", 0)]
	st.ISR, st.ZkVersion = []int32{2, 1}, st.ZkVersion+1
	zk.states[tp("t", 0)] = st
	if _, err := m.OnISRChange([]TopicPartition{tp("t", 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.OnAutoRebalance(10); err != nil {
		t.Fatal(err)
	}
	expectState(t, zk, m, tp("t", 0), 1, 2, 2, 1)
	expectState(t, zk, m, tp("t", 2), 2, 1, 2)
}
