package controller

import (
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/controller/zkdata"
)

func liveSet(ids ...int32) func(int32) bool {
	return func(id int32) bool { return contains(ids, id) }
}

func TestElect(t *testing.T) {
	st := func(leader, epoch int32, isr ...int32) zkdata.PartitionState {
		return zkdata.PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr, ControllerEpoch: 3, ZkVersion: 9}
	}
	for _, tc := range []struct {
		name   string
		s      ElectionStrategy
		in     ElectionInput
		ok     bool
		leader int32
		isr    []int32
		rec    int8
	}{
		{"offline: first live ISR member in replica order", ElectOffline,
			ElectionInput{Assignment: []int32{1, 2, 3}, Current: st(1, 5, 3, 1, 2), Live: liveSet(2, 3)}, true, 2, []int32{3, 2}, 0},
		{"offline: no live ISR, clean", ElectOffline,
			ElectionInput{Assignment: []int32{1, 2, 3}, Current: st(1, 5, 1), Live: liveSet(2, 3)}, false, 0, nil, 0},
		{"offline: no live ISR, unclean picks first live replica", ElectOffline,
			ElectionInput{Assignment: []int32{1, 3, 2}, Current: st(1, 5, 1), Live: liveSet(2, 3), Unclean: true}, true, 3, []int32{3}, zkdata.LeaderRecovering},
		{"offline: nothing live, unclean", ElectOffline,
			ElectionInput{Assignment: []int32{1}, Current: st(1, 5, 1), Live: liveSet(), Unclean: true}, false, 0, nil, 0},
		{"preferred: first replica live and in ISR", ElectPreferred,
			ElectionInput{Assignment: []int32{2, 1}, Current: st(1, 5, 1, 2), Live: liveSet(1, 2)}, true, 2, []int32{1, 2}, 0},
		{"preferred: first replica out of ISR", ElectPreferred,
			ElectionInput{Assignment: []int32{2, 1}, Current: st(1, 5, 1), Live: liveSet(1, 2)}, false, 0, nil, 0},
		{"reassign: first live ISR member of the target", ElectReassign,
			ElectionInput{Assignment: []int32{4, 2}, Current: st(1, 5, 1, 2, 4), Live: liveSet(1, 2)}, true, 2, []int32{1, 2, 4}, 0},
		{"controlled shutdown: skips and drops the shutting-down broker", ElectControlledShutdown,
			ElectionInput{Assignment: []int32{1, 2, 3}, Current: st(1, 5, 1, 2, 3), Live: liveSet(1, 2, 3), ShuttingDown: liveSet(1)}, true, 2, []int32{2, 3}, 0},
		{"controlled shutdown: only the shutting-down broker in ISR", ElectControlledShutdown,
			ElectionInput{Assignment: []int32{1, 2}, Current: st(1, 5, 1), Live: liveSet(1, 2), ShuttingDown: liveSet(1)}, false, 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Elect(tc.s, tc.in)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				if !reflect.DeepEqual(got, tc.in.Current) {
					t.Fatalf("failed election changed the state: %+v", got)
				}
				return
			}
			if got.Leader != tc.leader || !reflect.DeepEqual(got.ISR, tc.isr) || got.LeaderRecoveryState != tc.rec {
				t.Fatalf("got %+v, want leader %d isr %v recovery %d", got, tc.leader, tc.isr, tc.rec)
			}
			if got.LeaderEpoch != tc.in.Current.LeaderEpoch+1 || got.ZkVersion != tc.in.Current.ZkVersion {
				t.Fatalf("epoch %d zkVersion %d", got.LeaderEpoch, got.ZkVersion)
			}
			if &got.ISR[0] == &tc.in.Current.ISR[0] {
				t.Fatal("result shares the ISR slice with the input")
			}
		})
	}
}
