package coordhost

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// newShareStoreHost is a clusterHost whose internal topic is
// __share_group_state (two partitions), over a real replica.Manager in
// cluster mode on a temporary dir.
func newShareStoreHost(t *testing.T) *clusterHost {
	t.Helper()
	return newClusterHostWith(t, map[string]string{"share.coordinator.state.topic.num.partitions": "2"}, []controller.Topic{
		{Name: share.StateTopic, Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "t", Partitions: 4, ReplicationFactor: 2},
	})
}

// statePartOf is the __share_group_state partition (of 2) of a key.
func statePartOf(group string, tp share.TopicPartition) int32 {
	return share.StatePartitionFor(share.CoordinatorKey(group, tp), 2)
}

// awaitLoaded waits until the partition holding (group, tp) answers
// something other than COORDINATOR_LOAD_IN_PROGRESS, and returns that code.
func awaitLoaded(t *testing.T, h *Host, group string, tp share.TopicPartition) int16 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, code := h.ShareStateRead(group, tp, -1)
		if code != kerr.CoordinatorLoadInProgress.Code {
			return code
		}
		if time.Now().After(deadline) {
			t.Fatal("share coordinator partition still loading")
		}
		time.Sleep(time.Millisecond)
	}
}

// syncWrite runs one of the store's asynchronous calls and returns its code.
func syncWrite(t *testing.T, call func(done func(int16))) int16 {
	t.Helper()
	ch := make(chan int16, 2)
	call(func(code int16) { ch <- code })
	select {
	case code := <-ch:
		select {
		case <-ch:
			t.Fatal("done ran twice")
		case <-time.After(5 * time.Millisecond):
		}
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("done never ran")
	}
	return 0
}

func codeName(code int16) string {
	if code == 0 {
		return "no error"
	}
	return kerr.ErrorForCode(code).Error()
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %s, want %s", what, codeName(got), codeName(want))
	}
}

// TestShareStore: the share coordinator's store of one cluster broker
// serves only the __share_group_state partitions it leads; writes read
// back with their epochs and timestamps; stale leader and state epochs are
// fenced; a tombstone forgets a key; and after the leadership is lost and
// gained again the state replayed from the log equals what was written.
func TestShareStore(t *testing.T) {
	c := newShareStoreHost(t)
	h := c.h
	tid := c.ids["t"]
	tp0 := share.TopicPartition{TopicID: tid, Partition: 0}
	tp1 := share.TopicPartition{TopicID: tid, Partition: 1}
	const g = "sg"

	// Not a leader yet: NOT_COORDINATOR for everything.
	_, _, code := h.ShareStateRead(g, tp0, 0)
	wantCode(t, "read before leadership", code, kerr.NotCoordinator.Code)
	wantCode(t, "write before leadership", syncWrite(t, func(d func(int16)) {
		h.ShareStateWrite(g, tp0, share.Snapshot{StartOffset: 0}, d)
	}), kerr.NotCoordinator.Code)

	c.move(share.StateTopic, 0, true)
	c.move(share.StateTopic, 1, true)
	wantCode(t, "loaded", awaitLoaded(t, h, g, tp0), 0)
	wantCode(t, "loaded", awaitLoaded(t, h, g, tp1), 0)

	if _, found, code := h.ShareStateRead(g, tp0, 0); found || code != 0 {
		t.Fatalf("read of a key with no state: found %v, %s", found, codeName(code))
	}

	// Write, read back.
	s1 := share.Snapshot{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 10, Batches: []share.StateBatch{
		{First: 10, Last: 12, State: share.PersistAcknowledged, Count: 1},
		{First: 13, Last: 13, State: share.PersistAvailable, Count: 2},
		{First: 15, Last: 19, State: share.PersistArchived, Count: 5},
	}}
	before := time.Now().UnixMilli()
	wantCode(t, "first write", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, s1, d) }), 0)
	got, found, code := h.ShareStateRead(g, tp0, 1)
	if !found || code != 0 {
		t.Fatalf("read back: found %v, %s", found, codeName(code))
	}
	if got.SnapshotEpoch != 0 || got.CreateTimestamp < before || got.WriteTimestamp != got.CreateTimestamp {
		t.Fatalf("first snapshot: epoch %d, created %d, written %d", got.SnapshotEpoch, got.CreateTimestamp, got.WriteTimestamp)
	}
	want := s1
	want.CreateTimestamp, want.WriteTimestamp = got.CreateTimestamp, got.WriteTimestamp
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}

	// A second write replaces it: snapshot epoch +1, creation kept.
	time.Sleep(2 * time.Millisecond)
	s2 := share.Snapshot{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 13, Batches: []share.StateBatch{
		{First: 13, Last: 13, State: share.PersistAcknowledged, Count: 2},
		{First: 15, Last: 19, State: share.PersistArchived, Count: 5},
	}}
	wantCode(t, "second write", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, s2, d) }), 0)
	got2, _, _ := h.ShareStateRead(g, tp0, 1)
	if got2.SnapshotEpoch != 1 || got2.CreateTimestamp != got.CreateTimestamp || got2.WriteTimestamp <= got.WriteTimestamp ||
		!reflect.DeepEqual(got2.Batches, s2.Batches) || got2.StartOffset != 13 {
		t.Fatalf("second snapshot %+v (first %+v)", got2, got)
	}

	// Summary: 1 acknowledged + 5 archived at or above 13.
	se, so, fin, found, code := h.ShareStateSummary(g, tp0, 0)
	if code != 0 || !found || se != 0 || so != 13 || fin != 6 {
		t.Fatalf("summary: epoch %d start %d finished %d found %v %s", se, so, fin, found, codeName(code))
	}
	if _, _, _, found, code := h.ShareStateSummary(g, tp1, 0); found || code != 0 {
		t.Fatalf("summary of a key with no state: found %v %s", found, codeName(code))
	}

	// Fencing: an older leader epoch, an older state epoch, an invalid state.
	stale := s2
	stale.LeaderEpoch = 0
	wantCode(t, "write with a stale leader epoch", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, stale, d) }), kerr.FencedLeaderEpoch.Code)
	_, _, code = h.ShareStateRead(g, tp0, 0)
	wantCode(t, "read with a stale leader epoch", code, kerr.FencedLeaderEpoch.Code)
	bad := s2
	bad.Batches = []share.StateBatch{{First: 20, Last: 19}}
	wantCode(t, "invalid state", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, bad, d) }), kerr.InvalidRequest.Code)
	// A new leader's read raises the key's leader epoch: the old leader's
	// next write is fenced, the new one's is not.
	if _, _, code := h.ShareStateRead(g, tp0, 3); code != 0 {
		t.Fatalf("read by a new leader: %s", codeName(code))
	}
	wantCode(t, "write of the deposed leader", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, s2, d) }), kerr.FencedLeaderEpoch.Code)
	s3 := s2
	s3.LeaderEpoch = 3
	wantCode(t, "write of the new leader", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, s3, d) }), 0)
	// Leader epoch -1 is never fenced and keeps the key's epoch; state
	// epoch and start offset -1 keep the stored ones.
	keep := share.Snapshot{LeaderEpoch: -1, StateEpoch: -1, StartOffset: -1}
	wantCode(t, "write with epochs -1", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, keep, d) }), 0)
	if k, _, _ := h.ShareStateRead(g, tp0, -1); k.LeaderEpoch != 3 || k.StateEpoch != 0 || k.StartOffset != 13 || len(k.Batches) != 0 {
		t.Fatalf("state after a write with epochs -1: %+v", k)
	}

	// Initialize (an admin reset): a bumped state epoch, no batches; an
	// older state epoch is fenced, and so are writes of the old epoch.
	wantCode(t, "initialize", syncWrite(t, func(d func(int16)) { h.ShareStateInitialize(g, tp0, 2, 30, d) }), 0)
	init, _, _ := h.ShareStateRead(g, tp0, 3)
	if init.StateEpoch != 2 || init.StartOffset != 30 || len(init.Batches) != 0 || init.LeaderEpoch != 3 || init.SnapshotEpoch != 4 {
		t.Fatalf("initialized state %+v", init)
	}
	wantCode(t, "initialize with an older state epoch", syncWrite(t, func(d func(int16)) { h.ShareStateInitialize(g, tp0, 1, 0, d) }), kerr.FencedStateEpoch.Code)
	wantCode(t, "write with an older state epoch", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, s3, d) }), kerr.FencedStateEpoch.Code)
	wantCode(t, "initialize a new key without a start offset", syncWrite(t, func(d func(int16)) { h.ShareStateInitialize(g, tp1, 0, -1, d) }), kerr.InvalidRequest.Code)

	// A second key, then its deletion; deleting a key with no state is fine.
	wantCode(t, "initialize a new key", syncWrite(t, func(d func(int16)) { h.ShareStateInitialize(g, tp1, 0, 5, d) }), 0)
	tp2 := share.TopicPartition{TopicID: tid, Partition: 2}
	wantCode(t, "initialize a third key", syncWrite(t, func(d func(int16)) { h.ShareStateInitialize(g, tp2, 0, 7, d) }), 0)
	wantCode(t, "other group", syncWrite(t, func(d func(int16)) { h.ShareStateInitialize("other", tp2, 0, 7, d) }), 0)
	if keys := h.ShareStateKeys(g); !reflect.DeepEqual(keys, []share.TopicPartition{tp0, tp1, tp2}) {
		t.Fatalf("keys of %s: %v", g, keys)
	}
	wantCode(t, "delete", syncWrite(t, func(d func(int16)) { h.ShareStateDelete(g, tp1, d) }), 0)
	if _, found, code := h.ShareStateRead(g, tp1, 0); found || code != 0 {
		t.Fatalf("read of a deleted key: found %v %s", found, codeName(code))
	}
	wantCode(t, "delete again", syncWrite(t, func(d func(int16)) { h.ShareStateDelete(g, tp1, d) }), 0)
	if keys := h.ShareStateKeys(g); !reflect.DeepEqual(keys, []share.TopicPartition{tp0, tp2}) {
		t.Fatalf("keys of %s after the delete: %v", g, keys)
	}

	// What memory holds now is what a reload must find.
	wantState := map[share.TopicPartition]share.Snapshot{}
	for _, tp := range []share.TopicPartition{tp0, tp2} {
		s, _, _ := h.ShareStateRead(g, tp, -1)
		wantState[tp] = s
	}

	// Lose both partitions: NOT_COORDINATOR, keys forgotten.
	c.move(share.StateTopic, 0, false)
	c.move(share.StateTopic, 1, false)
	_, _, code = h.ShareStateRead(g, tp0, 3)
	wantCode(t, "read after the leadership moved", code, kerr.NotCoordinator.Code)
	if keys := h.ShareStateKeys(g); len(keys) != 0 {
		t.Fatalf("keys after unload: %v", keys)
	}

	// Gain them again: the replay brings back exactly what was written,
	// and the tombstone keeps the deleted key deleted.
	c.move(share.StateTopic, 0, true)
	c.move(share.StateTopic, 1, true)
	for _, tp := range []share.TopicPartition{tp0, tp1, tp2} {
		wantCode(t, "reloaded", awaitLoaded(t, h, g, tp), 0)
	}
	for tp, w := range wantState {
		s, found, code := h.ShareStateRead(g, tp, -1)
		if !found || code != 0 || !reflect.DeepEqual(s, w) {
			t.Fatalf("reloaded %v: %+v found %v %s, want %+v", tp, s, found, codeName(code), w)
		}
	}
	if _, found, _ := h.ShareStateRead(g, tp1, -1); found {
		t.Fatal("a deleted key came back after the reload")
	}
	// The reloaded leader epoch still fences.
	wantCode(t, "stale write after the reload", syncWrite(t, func(d func(int16)) { h.ShareStateWrite(g, tp0, s2, d) }), kerr.FencedLeaderEpoch.Code)
}

// TestShareStoreWriteOrder: writes to one key issued back to back, without
// waiting for their acknowledgements, and from several goroutines at once,
// leave the last one accepted in memory and in the log; a failed append
// leaves the state as it was.
func TestShareStoreWriteOrder(t *testing.T) {
	c := newShareStoreHost(t)
	h := c.h
	c.move(share.StateTopic, 0, true)
	c.move(share.StateTopic, 1, true)
	tp := share.TopicPartition{TopicID: c.ids["t"], Partition: 0}
	const g = "order"
	wantCode(t, "loaded", awaitLoaded(t, h, g, tp), 0)

	const n = 50
	var wg sync.WaitGroup
	codes := make([]int16, n)
	for i := range n {
		wg.Add(1)
		h.ShareStateWrite(g, tp, share.Snapshot{LeaderEpoch: 1, StartOffset: int64(i)}, func(code int16) {
			codes[i] = code
			wg.Done()
		})
	}
	wg.Wait()
	for i, code := range codes {
		wantCode(t, "queued write", code, 0)
		_ = i
	}
	s, _, _ := h.ShareStateRead(g, tp, -1)
	if s.StartOffset != n-1 || s.SnapshotEpoch != n-1 {
		t.Fatalf("after %d writes in order: %+v", n, s)
	}

	// Concurrent writers, each raising the state epoch: whichever order
	// the store accepted them in, none is lost and the survivor is the
	// highest epoch accepted last.
	var mu sync.Mutex
	accepted := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				done := make(chan int16, 1)
				h.ShareStateWrite(g, tp, share.Snapshot{LeaderEpoch: 1, StateEpoch: int32(j), StartOffset: int64(100 + i)}, func(code int16) { done <- code })
				if code := <-done; code == 0 {
					mu.Lock()
					accepted++
					mu.Unlock()
				} else if code != kerr.FencedStateEpoch.Code {
					t.Errorf("concurrent write: %s", codeName(code))
				}
			}
		}()
	}
	wg.Wait()
	s, _, _ = h.ShareStateRead(g, tp, -1)
	if s.StateEpoch != 9 || s.SnapshotEpoch != int32(n-1+accepted) {
		t.Fatalf("after %d accepted concurrent writes: %+v", accepted, s)
	}

	// A failed append: COORDINATOR_NOT_AVAILABLE, and memory unchanged.
	c.f.setFault(failPlan(share.StateTopic, 1))
	wantCode(t, "failed append", syncWrite(t, func(d func(int16)) {
		h.ShareStateWrite(g, tp, share.Snapshot{LeaderEpoch: 1, StateEpoch: 9, StartOffset: 999}, d)
	}), kerr.CoordinatorNotAvailable.Code)
	c.f.setFault(nil)
	if s2, _, _ := h.ShareStateRead(g, tp, -1); !reflect.DeepEqual(s2, s) {
		t.Fatalf("state after a failed append %+v, want %+v", s2, s)
	}

	// The log agrees with memory.
	c.move(share.StateTopic, statePartOf(g, tp), false)
	c.move(share.StateTopic, statePartOf(g, tp), true)
	wantCode(t, "reloaded", awaitLoaded(t, h, g, tp), 0)
	if s2, _, _ := h.ShareStateRead(g, tp, -1); !reflect.DeepEqual(s2, s) {
		t.Fatalf("reloaded %+v, want %+v", s2, s)
	}
}

// TestShareStoreReadWaitsForWrites: a read that raises a key's leader
// epoch (a new share-partition leader loading its state) while a write of
// the key by the old leader is being appended answers
// COORDINATOR_LOAD_IN_PROGRESS and raises nothing; once the write is
// acknowledged the read returns the state with it. Otherwise the new
// leader would start from the state without the write, which the old
// leader confirms all the same.
func TestShareStoreReadWaitsForWrites(t *testing.T) {
	c := newShareStoreHost(t)
	h := c.h
	tp := share.TopicPartition{TopicID: c.ids["t"], Partition: 0}
	const g = "handover"
	c.move(share.StateTopic, statePartOf(g, tp), true)
	wantCode(t, "loaded", awaitLoaded(t, h, g, tp), 0)
	wantCode(t, "first write", syncWrite(t, func(d func(int16)) {
		h.ShareStateWrite(g, tp, share.Snapshot{LeaderEpoch: 1, StartOffset: 10}, d)
	}), 0)

	release := c.f.holdAppends()
	written := make(chan int16, 1)
	h.ShareStateWrite(g, tp, share.Snapshot{LeaderEpoch: 1, StartOffset: 20}, func(code int16) { written <- code })
	_, _, code := h.ShareStateRead(g, tp, 2)
	wantCode(t, "read by the next leader during the old leader's write", code, kerr.CoordinatorLoadInProgress.Code)
	release()
	wantCode(t, "the old leader's write", <-written, 0)
	s, found, code := h.ShareStateRead(g, tp, 2)
	wantCode(t, "read by the next leader after the write", code, 0)
	if !found || s.StartOffset != 20 {
		t.Fatalf("the next leader read %+v (found %v), want start offset 20", s, found)
	}
	wantCode(t, "the old leader's write after the read", syncWrite(t, func(d func(int16)) {
		h.ShareStateWrite(g, tp, share.Snapshot{LeaderEpoch: 1, StartOffset: 30}, d)
	}), kerr.FencedLeaderEpoch.Code)
}

// TestShareStoreSingleNode: on a single node nothing loads the store, so
// every call answers NOT_COORDINATOR and the share host keeps
// __share_group_state to itself.
func TestShareStoreSingleNode(t *testing.T) {
	h, _ := newFaultyHost(t, nil)
	tp := share.TopicPartition{Partition: 0}
	if _, _, code := h.ShareStateRead("g", tp, 0); code != kerr.NotCoordinator.Code {
		t.Fatalf("read: %s", codeName(code))
	}
	wantCode(t, "write", syncWrite(t, func(d func(int16)) { h.ShareStateWrite("g", tp, share.Snapshot{}, d) }), kerr.NotCoordinator.Code)
	wantCode(t, "delete", syncWrite(t, func(d func(int16)) { h.ShareStateDelete("g", tp, d) }), kerr.NotCoordinator.Code)
	if keys := h.ShareStateKeys("g"); len(keys) != 0 {
		t.Fatalf("keys: %v", keys)
	}
}
