package replica

import (
	"reflect"
	"time"
)

// The delayed operations, as Kafka's purgatories: the delayed fetch
// (fetch_wait.go) and the acks=all produce (delayed_produce.go) are
// watchers completed by the partition changes they wait for. WaitAny is
// what is left of the older wait on arrival channels, for the share fetch
// handler (broker/api/share_fetch.go).

// WaitAny blocks until one channel fires (true), or the timeout or shutdown
// (false).
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
