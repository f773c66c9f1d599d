package coordhost

import "sync"

// ackGate runs the acknowledgement callback of an internal-topic write that
// was started under a host's lock with that lock held, whenever the
// acknowledgement comes. On a single node it comes at once, inside the
// append call, on the starting goroutine: the callback is held and runs at
// release, which the starter calls, still under its lock, once the append
// call returned — so replies still leave before the host call returns. In
// a cluster it comes when replication completes, from another goroutine,
// possibly before the starter released: it is held the same way, and if
// it comes after release it takes the lock itself. Either way the callback
// runs exactly once, with the lock held, never concurrently with the host.
type ackGate struct {
	lock sync.Locker

	mu       sync.Mutex
	released bool
	held     []func()
}

// newAckGate returns a gate for callbacks that must run under lock.
func newAckGate(lock sync.Locker) *ackGate { return &ackGate{lock: lock} }

// wrap returns the callback to pass to the append: it runs f(err) under the
// gate's rules.
func (a *ackGate) wrap(f func(error)) func(error) {
	return func(err error) {
		a.mu.Lock()
		if !a.released {
			a.held = append(a.held, func() { f(err) })
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		a.lock.Lock()
		defer a.lock.Unlock()
		f(err)
	}
}

// release is called by the starter with its lock held, after the append
// call returned: the callbacks held so far run now.
func (a *ackGate) release() {
	a.mu.Lock()
	a.released = true
	held := a.held
	a.held = nil
	a.mu.Unlock()
	for _, f := range held {
		f()
	}
}
