package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestFence(t *testing.T) {
	var f Fence
	if err := f.Admit(3, 100, 100); err != nil {
		t.Fatal(err)
	}
	if err := f.Admit(2, 100, 100); !errors.Is(err, kerr.StaleControllerEpoch) {
		t.Fatalf("old controller: %v", err)
	}
	if err := f.Admit(3, 99, 100); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("old broker epoch: %v", err)
	}
	if err := f.Admit(3, -1, 100); err != nil {
		t.Fatalf("unversioned broker epoch: %v", err)
	}
	if err := f.Admit(4, 101, 100); err != nil || f.Epoch() != 4 {
		t.Fatalf("newer: %v, epoch %d", err, f.Epoch())
	}
	// A refused request does not move the fence.
	_ = f.Admit(9, 1, 100)
	if f.Epoch() != 4 {
		t.Fatalf("fence moved to %d on a refused request", f.Epoch())
	}
}

func TestAdmitPartitionState(t *testing.T) {
	for _, tc := range []struct {
		req, cur int32
		moved    bool
		stale    bool
	}{
		{5, 4, true, false}, {5, -1, true, false}, {5, 5, false, false},
		{4, 5, false, true}, {-1, 5, false, false}, {EpochDuringDelete, 5, false, false},
	} {
		moved, err := AdmitPartitionState(tc.req, tc.cur)
		if moved != tc.moved || errors.Is(err, kerr.StaleControllerEpoch) != tc.stale {
			t.Errorf("req %d cur %d: moved %v err %v", tc.req, tc.cur, moved, err)
		}
	}
}
