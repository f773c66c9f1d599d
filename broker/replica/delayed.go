package replica

import (
	"reflect"
	"time"
)

// delayedOp is an operation that may have to wait for the partitions to
// change before it can complete, as Kafka's DelayedOperation: a fetch below
// MinBytes today (delayedFetch), and an acks=all produce waiting for the
// high watermark once followers replicate (Kafka's DelayedProduce).
type delayedOp interface {
	// tryComplete attempts the operation. When it cannot complete yet it
	// returns the channels whose firing may let it (taken before it
	// checked, so a change in between is not missed).
	tryComplete() (done bool, watch []<-chan struct{})
	// onExpire finishes the operation at its deadline or at shutdown.
	onExpire()
}

// runDelayed completes op in the calling goroutine: at once if it can,
// otherwise each time one of its channels fires, until deadline or broker
// shutdown (then onExpire). A deadline already past means no wait and no
// onExpire: what the first attempt produced is the answer.
func (m *Manager) runDelayed(op delayedOp, deadline time.Time) {
	for {
		done, watch := op.tryComplete()
		if done {
			return
		}
		left := deadline.Sub(m.now())
		if left <= 0 {
			return
		}
		if !m.WaitAny(watch, left) {
			op.onExpire()
			return
		}
	}
}

// WaitAny blocks until one channel fires (true), or the timeout or shutdown (false).
func (m *Manager) WaitAny(chans []<-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.closing)})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2
}
