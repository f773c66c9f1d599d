package network

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleDelays splits a request's throttle (RequestContext.ThrottleMs)
// into the wait before its response is written and the mute after it. A
// response whose version has KIP-219's semantics (the client backs off by
// itself, kmsg.ThrottleResponse reports it) goes out at once and the
// connection is muted afterwards, as Kafka mutes the channel; an older
// version's response is held back instead, which is how those clients
// learn to slow down. A request without a response (acks=0) mutes.
func throttleDelays(ctx *RequestContext, resp kmsg.Response) (before, after time.Duration) {
	if ctx.ThrottleMs <= 0 {
		return 0, 0
	}
	d := time.Duration(ctx.ThrottleMs) * time.Millisecond
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		if _, clientWaits := tr.Throttle(); !clientWaits {
			return d, 0
		}
	}
	return 0, d
}

// throttleWait waits d, or less when the connection stops (shutdown). The
// connection's reader goes on reading ahead into its bounded queue
// meanwhile; no request is answered until the wait ends.
func (c *conn) throttleWait(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.stop:
	}
}
