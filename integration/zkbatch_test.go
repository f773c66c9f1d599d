package integration

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kbroker/kbroker/controller/zkclient"
)

// The controller's batched ZooKeeper writes (zkclient.SetManyChecked,
// CreateManyChecked) against a real ZooKeeper: each write's outcome is the
// one it would have had alone, whether its multi-op succeeded or another
// write of the same multi-op failed it.
func TestZooKeeperBatchedCheckedWrites(t *testing.T) {
	z := StartZooKeeper(t)
	c := dial(t, z.Addr+"/batch")
	if _, err := c.Create("/epoch", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePath("/p"); err != nil {
		t.Fatal(err)
	}
	n := zkclient.MultiBatch + 7 // two multi-ops
	var creates []zkclient.CreateOp
	for i := 0; i < n; i++ {
		creates = append(creates, zkclient.CreateOp{Parent: fmt.Sprintf("/p/%d", i), Path: fmt.Sprintf("/p/%d/state", i), Data: []byte("a")})
	}
	// One parent exists already: its batch is made one znode at a time,
	// where an existing parent is no error.
	if _, err := c.Create("/p/3", nil, 0); err != nil {
		t.Fatal(err)
	}
	for i, r := range c.CreateManyChecked("/epoch", 0, creates) {
		if r.Err != nil || r.CheckFailed {
			t.Fatalf("create %d: %+v", i, r)
		}
	}
	// Another existing state znode fails only itself.
	res := c.CreateManyChecked("/epoch", 0, creates[5:6])
	if !errors.Is(res[0].Err, zkclient.ErrNodeExists) || res[0].CheckFailed {
		t.Fatalf("existing state: %+v", res[0])
	}

	var sets []zkclient.SetOp
	for i := 0; i < n; i++ {
		sets = append(sets, zkclient.SetOp{Path: fmt.Sprintf("/p/%d/state", i), Data: []byte("b"), Version: 0})
	}
	sets[n-1].Version = 7 // stale: fails alone, its batch's others are written
	for i, r := range c.SetManyChecked("/epoch", 0, sets) {
		switch {
		case i == n-1:
			if !errors.Is(r.Err, zkclient.ErrBadVersion) || r.CheckFailed {
				t.Fatalf("stale write %d: %+v", i, r)
			}
		case r.Err != nil || r.CheckFailed || r.Version != 1:
			t.Fatalf("write %d: %+v", i, r)
		}
	}
	for _, i := range []int{0, zkclient.MultiBatch, n - 2} {
		if data, stat, err := c.Get(fmt.Sprintf("/p/%d/state", i)); err != nil || string(data) != "b" || stat.Version != 1 {
			t.Fatalf("state %d: %q %v %v", i, data, stat, err)
		}
	}
	// A moved epoch fails every write as CheckFailed, and writes nothing.
	if _, err := c.Set("/epoch", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	for i, r := range c.SetManyChecked("/epoch", 0, sets[:3]) {
		if !r.CheckFailed {
			t.Fatalf("write %d after the epoch moved: %+v", i, r)
		}
	}
	if data, _, err := c.Get("/p/0/state"); err != nil || string(data) != "b" {
		t.Fatalf("state 0 after a failed check: %q %v", data, err)
	}
}
