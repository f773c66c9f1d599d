package coordhost

// Plumbing shared by the hosts of the pure coordinators (groups.go,
// txns.go): reply tokens and timers. A handler waits for its token in
// api (awaitReply).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

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
