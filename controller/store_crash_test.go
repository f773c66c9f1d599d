package controller

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

// TestFileStoreCrashAtEverySync writes a sequence of metadata changes on an
// in-memory file system, "crashes" at every fsync (keeping only what was
// durable, sometimes with a torn tail of unsynced bytes), and reopens the
// store from each crash: it must open, and hold exactly the state after
// some prefix of the changes — the one before or the one after the change
// in flight, never a mixture, never an empty cluster.
func TestFileStoreCrashAtEverySync(t *testing.T) {
	mem := vfs.NewMem()
	const dir = "/data"
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.SyncDir(mem, "/"); err != nil { // the log dir itself is durable
		t.Fatal(err)
	}
	type point struct {
		fs   *vfs.MemFS
		step int // changes completed when the crash happened
	}
	var (
		mu     sync.Mutex
		points []point
		step   = -1 // the store's file is being created
	)
	rng := rand.New(rand.NewSource(1))
	mem.SetSyncHook(func(string) {
		mu.Lock()
		defer mu.Unlock()
		points = append(points, point{mem.CrashClone(vfs.CrashOptions{}), step})
		points = append(points, point{mem.CrashClone(vfs.CrashOptions{Rand: rng}), step})
	})
	s, err := openFileStore(mem, dir, "crash-cluster", nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	step = 0
	mu.Unlock()
	// states[i] is the store's state after i changes.
	states := []fileState{snapshotState(t, s)}
	changes := []func() error{
		func() error { return s.CreateTopic(Topic{Name: "a", Partitions: 3, ReplicationFactor: 1}) },
		func() error { return s.CreateTopic(Topic{Name: "b", Partitions: 1, ReplicationFactor: 1}) },
		func() error { return s.UpdateTopicConfigs("a", map[string]string{"retention.ms": "1000"}) },
		func() error { _, err := s.NextProducerIDBlock(1000); return err },
		func() error {
			return s.AlterScramCredentials([]ScramChange{{User: "u", Mechanism: "SCRAM-SHA-256", Credential: ScramCredential{Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}}})
		},
		func() error { return s.AddPartitions("b", 4) },
		func() error { return s.DeleteTopic("a") },
	}
	for i, change := range changes {
		if err := change(); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		mu.Lock()
		step = i + 1
		mu.Unlock()
		states = append(states, snapshotState(t, s))
	}
	mem.SetSyncHook(nil)
	if len(points) < 2*len(changes) {
		t.Fatalf("only %d crash points for %d changes", len(points), len(changes))
	}
	for i, p := range points {
		where := fmt.Sprintf("crash point %d (after %d changes)", i, p.step)
		got, err := openFileStore(p.fs, dir, "other-cluster", nil)
		if err != nil {
			t.Fatalf("%s: reopen: %v", where, err)
		}
		st := snapshotState(t, got)
		if p.step < 0 {
			// Crashed while the store was first written: either nothing
			// was durable (a new store, here with another id) or all of it.
			if st.ClusterID != "other-cluster" && !reflect.DeepEqual(st, states[0]) {
				t.Fatalf("%s: half-created store %+v", where, st)
			}
			continue
		}
		before := states[p.step]
		after := before
		if p.step+1 < len(states) {
			after = states[p.step+1]
		}
		if !reflect.DeepEqual(st, before) && !reflect.DeepEqual(st, after) {
			t.Fatalf("%s: state %+v is neither the one before (%+v) nor after (%+v) the change in flight", where, st, before, after)
		}
	}
}

// snapshotState is a deep copy of the store's state.
func snapshotState(t *testing.T, s *FileStore) fileState {
	t.Helper()
	s.mu.Lock()
	b, err := json.Marshal(&s.mu.state)
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	var st fileState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}
