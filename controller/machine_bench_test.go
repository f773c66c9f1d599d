package controller

import (
	"fmt"
	"testing"

	"github.com/kbroker/kbroker/controller/zkdata"
)

// BenchmarkBrokerFailure measures one broker failure decision (elections,
// ISR shrinks, request building) on 3 brokers with n partitions of RF 3
// each, against the in-memory state store.
func BenchmarkBrokerFailure(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				zk := newFakeZK()
				m := NewMachine(NewContext(1, 5, 0), zk)
				all := map[int32]LiveBroker{1: broker(1, 101), 2: broker(2, 102), 3: broker(3, 103)}
				if _, err := m.OnBrokerChange(all); err != nil {
					b.Fatal(err)
				}
				parts := map[int32][]int32{}
				assign, _ := AssignReplicasFrom([]BrokerMetadata{{ID: 1}, {ID: 2}, {ID: 3}}, int32(n), 3, 0, 0, nil)
				for p, rs := range assign {
					parts[p] = rs
				}
				if _, err := m.OnTopicChange("t", zkdata.TopicAssignment{Partitions: parts}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				out, err := m.OnBrokerChange(map[int32]LiveBroker{2: all[2], 3: all[3]})
				if err != nil || len(out.Sends) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
