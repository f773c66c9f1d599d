package coordhost

// Plumbing shared by the hosts of the pure coordinators (groups.go,
// txns.go, share_groups.go): reply tokens, timers, and the recovery of a
// panic in a timer. A handler waits for its token in api (awaitReply).

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reloadRetry is how soon a host whose coordinator was dropped (a failed
// write of its internal topic, a recovered panic) tries to load it again
// when no request does so first.
const reloadRetry = time.Second

// Token is the reply slot of one request handed to a coordinator; it
// receives exactly one response, possibly from a later call.
type Token chan kmsg.Response

// deliver hands resp to the request waiting on tok (a token; other values
// are ignored). It never blocks: a token holds one response.
func deliver(tok any, resp kmsg.Response) {
	if t, ok := tok.(Token); ok {
		select {
		case t <- resp:
		default:
		}
	}
}

// earliest is the earliest non-zero time, or zero when all are zero.
func earliest(ts ...time.Time) time.Time {
	var min time.Time
	for _, t := range ts {
		if !t.IsZero() && (min.IsZero() || t.Before(min)) {
			min = t
		}
	}
	return min
}

// rearm schedules f at next (zero: nothing to schedule), creating the timer on first use.
func rearm(timer **time.Timer, now, next time.Time, f func()) {
	if next.IsZero() {
		return
	}
	d := max(next.Sub(now), 0)
	if *timer == nil {
		*timer = time.AfterFunc(d, f)
		return
	}
	(*timer).Reset(d)
}

// recoverTimer is deferred at the top of every coordinator timer function
// (time.AfterFunc runs it on its own goroutine, where a panic would end the
// process). It recovers a panic, counts it (TimerPanics), logs it once with
// the timer's name, the value and the stack, and then runs reset, which puts
// the host back into a known state (the group and transaction hosts drop
// their coordinator, which the next call or the reload timer replays from
// its internal topic). The host's lock is free again by then: every locked
// section releases it with defer.
func (h *Host) recoverTimer(timer string, reset func()) {
	r := recover()
	if r == nil {
		return
	}
	n := h.timerPanics.Add(1)
	h.log.Error("panic in a coordinator timer recovered; the broker keeps running",
		"timer", timer, "panic", fmt.Sprint(r), "panics_so_far", n, "stack", string(debug.Stack()))
	if reset != nil {
		reset()
	}
}

// TimerPanics is how many panics coordinator timers recovered from since
// the broker started.
func (h *Host) TimerPanics() int64 { return h.timerPanics.Load() }
