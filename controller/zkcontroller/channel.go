package zkcontroller

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Channel carries the controller's requests to brokers (Kafka's
// ControllerChannelManager). Requests to one broker are sent one at a time,
// in order, each retried until it is answered or the broker is removed.
type Channel interface {
	// AddBroker starts (or re-targets) the queue of broker id at addr
	// ("host:port" of its inter-broker listener).
	AddBroker(id int32, addr string)
	// RemoveBroker drops broker id's queue and what is pending in it.
	RemoveBroker(id int32)
	// Send queues req for broker id; it never blocks. A broker without a
	// queue drops the request.
	Send(id int32, req kmsg.Request)
	// SendAfter is Send, but req (and whatever is queued behind it) leaves
	// only once every request queued so far for the brokers others is
	// answered (or their queues are dropped), or GateTimeout after it was
	// queued: the controller updates its own broker's metadata last.
	SendAfter(id int32, req kmsg.Request, others []int32)
	// Drain waits until every request queued so far is answered, or its
	// broker's queue is dropped, or ctx ends.
	Drain(ctx context.Context)
	// Close stops every queue; what is still queued is dropped.
	Close()
}

// ResponseFunc sees every answered request (for logging and for the
// controller's reactions to errors).
type ResponseFunc func(broker int32, req kmsg.Request, resp kmsg.Response)

// TCPChannel is a Channel over TCP with Kafka framing (protocol/kconn: TLS
// and SASL as the inter-broker listener wants), one connection per broker.
type TCPChannel struct {
	conn       kconn.Options
	log        *slog.Logger
	onResponse ResponseFunc
	backoff    time.Duration
	timeout    time.Duration

	mu     sync.Mutex
	queues map[int32]*brokerQueue
	closed bool
}

// NewTCPChannel returns a channel connecting with conn (its ClientID names
// the controller, "controller-<id>"), calling onResponse (may be nil) for
// every answer. A response's size prefix above 100 MiB means a corrupt
// stream.
func NewTCPChannel(conn kconn.Options, log *slog.Logger, onResponse ResponseFunc) *TCPChannel {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn.MaxResponse = 100 << 20
	return &TCPChannel{conn: conn, log: log, onResponse: onResponse,
		backoff: 100 * time.Millisecond, timeout: 30 * time.Second, queues: map[int32]*brokerQueue{}}
}

// GateTimeout bounds how long a SendAfter request waits for the other
// brokers' queues: a broker that does not answer (paused, partitioned)
// delays the controller's own metadata by at most this much.
const GateTimeout = 2 * time.Second

type brokerQueue struct {
	id     int32
	addr   string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}
	mu     sync.Mutex
	// pending are the requests not yet answered, oldest first.
	pending []pendingReq
	// queued and answered count the requests ever queued and answered.
	// Invariant: answered <= queued.
	queued, answered uint64
	// drains are closed once answered reaches their target, or when the
	// queue stops.
	drains []queueDrain
}

// pendingReq is one queued request; after are the gates it waits for
// (SendAfter), until at.Add(GateTimeout).
type pendingReq struct {
	req   kmsg.Request
	after []<-chan struct{}
	at    time.Time
}

type queueDrain struct {
	target uint64
	ch     chan struct{}
}

// drainedLocked returns a channel closed once every request queued so far
// is answered. q.mu must be held.
func (q *brokerQueue) drainedLocked() <-chan struct{} {
	ch := make(chan struct{})
	if q.answered >= q.queued {
		close(ch)
		return ch
	}
	q.drains = append(q.drains, queueDrain{q.queued, ch})
	return ch
}

// answeredLocked counts one more answered request and closes the drains it
// completes. q.mu must be held.
func (q *brokerQueue) answeredLocked() {
	q.pending = q.pending[1:]
	q.answered++
	kept := q.drains[:0]
	for _, d := range q.drains {
		if d.target <= q.answered {
			close(d.ch)
		} else {
			kept = append(kept, d)
		}
	}
	q.drains = kept
}

// AddBroker implements Channel.
func (t *TCPChannel) AddBroker(id int32, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if q, ok := t.queues[id]; ok {
		if q.addr == addr {
			return
		}
		t.stopLocked(q)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &brokerQueue{id: id, addr: addr, ctx: ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	t.queues[id] = q
	go t.run(q)
}

// RemoveBroker implements Channel.
func (t *TCPChannel) RemoveBroker(id int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if q, ok := t.queues[id]; ok {
		t.stopLocked(q)
	}
}

func (t *TCPChannel) stopLocked(q *brokerQueue) {
	delete(t.queues, q.id)
	q.cancel()
	<-q.done
	q.mu.Lock()
	for _, d := range q.drains {
		close(d.ch)
	}
	q.drains = nil
	q.mu.Unlock()
}

// Send implements Channel.
func (t *TCPChannel) Send(id int32, req kmsg.Request) { t.SendAfter(id, req, nil) }

// SendAfter implements Channel.
func (t *TCPChannel) SendAfter(id int32, req kmsg.Request, others []int32) {
	t.mu.Lock()
	q := t.queues[id]
	var gates []<-chan struct{}
	for _, o := range others {
		if oq := t.queues[o]; oq != nil && o != id {
			oq.mu.Lock()
			gates = append(gates, oq.drainedLocked())
			oq.mu.Unlock()
		}
	}
	t.mu.Unlock()
	if q == nil {
		t.log.Warn("dropping controller request for unknown broker", "broker", id, "key", kmsg.NameForKey(req.Key()))
		return
	}
	q.mu.Lock()
	q.pending = append(q.pending, pendingReq{req: req, after: gates, at: time.Now()})
	q.queued++
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Drain implements Channel.
func (t *TCPChannel) Drain(ctx context.Context) {
	t.mu.Lock()
	var drained []<-chan struct{}
	for _, q := range t.queues {
		q.mu.Lock()
		drained = append(drained, q.drainedLocked())
		q.mu.Unlock()
	}
	t.mu.Unlock()
	for _, ch := range drained {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// Close implements Channel.
func (t *TCPChannel) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, q := range t.queues {
		t.stopLocked(q)
	}
}

// run is broker q's sender: one request at a time, reconnecting and
// retrying the head of the queue until it is answered.
func (t *TCPChannel) run(q *brokerQueue) {
	defer close(q.done)
	var conn *kconn.Conn
	lastDialErr := "" // the authentication error last logged
	closeConn := func() {
		if conn != nil {
			conn.Close()
			conn = nil
		}
	}
	defer closeConn()
	for {
		q.mu.Lock()
		var head pendingReq
		if len(q.pending) > 0 {
			head = q.pending[0]
		}
		q.mu.Unlock()
		req := head.req
		if req == nil {
			select {
			case <-q.ctx.Done():
				return
			case <-q.wake:
				continue
			}
		}
		if len(head.after) > 0 {
			if !awaitGates(q.ctx, head) {
				return
			}
			q.mu.Lock()
			q.pending[0].after = nil
			q.mu.Unlock()
		}
		if conn == nil {
			c, err := kconn.Dial(q.ctx, q.addr, t.conn)
			if err != nil {
				// A refused handshake or login is a configuration error
				// the operator must see (once per distinct error).
				var cerr *tls.CertificateVerificationError
				if errors.Is(err, kconn.ErrAuthentication) || errors.As(err, &cerr) {
					if msg := err.Error(); msg != lastDialErr {
						t.log.Warn("controller cannot authenticate to broker", "broker", q.id, "addr", q.addr, "err", err)
						lastDialErr = msg
					}
				} else {
					t.log.Debug("controller cannot reach broker", "broker", q.id, "addr", q.addr, "err", err)
				}
				if !t.sleep(q) {
					return
				}
				continue
			}
			conn = c
		}
		resp, err := conn.RoundTrip(req, t.timeout)
		if err != nil {
			if q.ctx.Err() != nil {
				return
			}
			t.log.Debug("controller request failed, retrying", "broker", q.id, "key", kmsg.NameForKey(req.Key()), "err", err)
			closeConn()
			if !t.sleep(q) {
				return
			}
			continue
		}
		q.mu.Lock()
		q.answeredLocked()
		q.mu.Unlock()
		if t.onResponse != nil {
			t.onResponse(q.id, req, resp)
		}
	}
}

// awaitGates waits until each of p's gates is closed or GateTimeout after
// p was queued; false when ctx ends first.
func awaitGates(ctx context.Context, p pendingReq) bool {
	timer := time.NewTimer(time.Until(p.at.Add(GateTimeout)))
	defer timer.Stop()
	for _, g := range p.after {
		select {
		case <-g:
		case <-timer.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	return true
}

func (t *TCPChannel) sleep(q *brokerQueue) bool {
	timer := time.NewTimer(t.backoff)
	defer timer.Stop()
	select {
	case <-q.ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// ErrNoEndpoint reports a broker without the inter-broker listener.
var ErrNoEndpoint = errors.New("broker has no endpoint on the inter-broker listener")

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
