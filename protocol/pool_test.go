package protocol

import (
	"testing"
	"time"
)

func TestMemoryPoolBlocksWhenFullAndWakesOnRelease(t *testing.T) {
	p := NewMemoryPool(100)
	if !p.Reserve(60, nil) || !p.Reserve(60, nil) {
		t.Fatal("reservations below capacity refused")
	}
	// 120 used of 100: the next reader waits.
	got := make(chan bool, 1)
	go func() { got <- p.Reserve(10, nil) }()
	select {
	case <-got:
		t.Fatal("reservation granted while the pool was exhausted")
	case <-time.After(50 * time.Millisecond):
	}
	p.Release(60)
	if ok := <-got; !ok {
		t.Fatal("waiting reservation failed after release")
	}
	if u := p.Used(); u != 70 {
		t.Fatalf("used = %d, want 70", u)
	}
}

func TestMemoryPoolStopAndLargeFrames(t *testing.T) {
	p := NewMemoryPool(100)
	// One frame larger than the whole pool still proceeds when memory is free.
	if !p.Reserve(500, nil) {
		t.Fatal("large frame refused with the pool empty")
	}
	stop := make(chan struct{})
	got := make(chan bool, 1)
	go func() { got <- p.Reserve(1, stop) }()
	close(stop)
	if ok := <-got; ok {
		t.Fatal("reservation granted after stop")
	}
	p.Release(500)
	if u := p.Used(); u != 0 {
		t.Fatalf("used = %d after releasing everything (a stopped waiter must take nothing)", u)
	}
	if !NewMemoryPool(0).Reserve(1<<40, nil) {
		t.Fatal("unbounded pool refused")
	}
}
