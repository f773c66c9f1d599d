package coordhost

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller"
)

// fakePIDCluster is a Cluster whose controller hands out producer id
// blocks of 100 in order; only AllocateProducerIDs is implemented. With
// block set, a call waits for its context to end and fails.
type fakePIDCluster struct {
	Cluster
	mu    sync.Mutex
	calls int
	block bool
}

func (f *fakePIDCluster) AllocateProducerIDs(ctx context.Context) (int64, int64, error) {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return 0, 0, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	start := int64(f.calls) * 100
	f.calls++
	return start, 100, nil
}

func (f *fakePIDCluster) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func newPIDHost(c Cluster) *Host {
	h := &Host{log: slog.New(slog.DiscardHandler), cluster: c}
	h.pids.b = h
	return h
}

// From the controller, ids come in order from its blocks; the next block
// is fetched in the background once 90% of the current one is used, so
// the allocation that crosses into it does not wait for the controller.
func TestProducerIDsFromControllerPrefetch(t *testing.T) {
	src := &fakePIDCluster{}
	h := newPIDHost(src)
	defer h.pids.close()
	for want := int64(0); want < 91; want++ {
		id, err := h.pids.allocate()
		if err != nil || id != want {
			t.Fatalf("allocate: %d, %v; want %d", id, err, want)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for src.count() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no prefetch after 90 of 100 ids")
		}
		time.Sleep(time.Millisecond)
	}
	for want := int64(91); want < 150; want++ {
		id, err := h.pids.allocate()
		if err != nil || id != want {
			t.Fatalf("allocate: %d, %v; want %d", id, err, want)
		}
	}
	if n := src.count(); n != 2 {
		t.Fatalf("%d blocks fetched, want 2 (the prefetched one used)", n)
	}
}

// close cancels a prefetch that waits for the controller and returns.
func TestProducerIDsCloseCancelsPrefetch(t *testing.T) {
	src := &fakePIDCluster{}
	h := newPIDHost(src)
	for range 91 {
		if _, err := h.pids.allocate(); err != nil {
			t.Fatal(err)
		}
		src.mu.Lock()
		src.block = true // every call after the first block's waits
		src.mu.Unlock()
	}
	h.pids.mu.Lock()
	fetching := h.pids.fetching
	h.pids.mu.Unlock()
	if !fetching {
		t.Fatal("no prefetch on the way after 90 of 100 ids")
	}
	done := make(chan struct{})
	go func() { h.pids.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("close did not cancel the prefetch")
	}
}

// fakePIDStore is a metadata store whose producer id blocks start at
// 5000; only NextProducerIDBlock is implemented.
type fakePIDStore struct {
	controller.Store
	next int64
}

func (s *fakePIDStore) NextProducerIDBlock(n int64) (int64, error) {
	first := 5000 + s.next
	s.next += n
	return first, nil
}

// A controller that does not answer within producerIDRequestTimeout: the
// block comes from the metadata store, and ids keep coming.
func TestProducerIDsFallBackToStore(t *testing.T) {
	if testing.Short() {
		t.Skip("waits producerIDRequestTimeout")
	}
	src := &fakePIDCluster{block: true}
	h := newPIDHost(src)
	h.store = &fakePIDStore{}
	defer h.pids.close()
	for want := int64(5000); want < 5003; want++ {
		id, err := h.pids.allocate()
		if err != nil || id != want {
			t.Fatalf("allocate: %d, %v; want %d", id, err, want)
		}
	}
}
