package coordhost

import (
	"errors"
	"sync"
	"testing"
)

// TestAckGate checks both ways an acknowledgement comes: inside the append
// call (held until release, run under the starter's lock) and later from
// another goroutine (runs after taking the lock, never while the starter
// holds it).
func TestAckGate(t *testing.T) {
	var mu sync.Mutex
	state := 0 // guarded by mu

	// Synchronous: the callback fires before the starter releases.
	mu.Lock()
	g := newAckGate(&mu)
	g.wrap(func(error) { state++ })(nil)
	if state != 0 {
		t.Fatal("callback ran before release")
	}
	g.release()
	if state != 1 {
		t.Fatal("held callback did not run at release")
	}
	mu.Unlock()

	// Asynchronous: the callback fires after release, from another
	// goroutine, while the starter still holds the lock.
	mu.Lock()
	g = newAckGate(&mu)
	cb := g.wrap(func(err error) {
		if !errors.Is(err, errTest) {
			t.Errorf("err = %v", err)
		}
		state++
	})
	g.release()
	done := make(chan struct{})
	go func() { cb(errTest); close(done) }()
	state += 10 // the starter still owns the state
	mu.Unlock()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if state != 12 {
		t.Fatalf("state = %d, want 12", state)
	}
}

var errTest = errors.New("test")
