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
	// Close stops every queue.
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

type brokerQueue struct {
	id      int32
	addr    string
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	wake    chan struct{}
	mu      sync.Mutex
	pending []kmsg.Request
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
}

// Send implements Channel.
func (t *TCPChannel) Send(id int32, req kmsg.Request) {
	t.mu.Lock()
	q := t.queues[id]
	t.mu.Unlock()
	if q == nil {
		t.log.Warn("dropping controller request for unknown broker", "broker", id, "key", kmsg.NameForKey(req.Key()))
		return
	}
	q.mu.Lock()
	q.pending = append(q.pending, req)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
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
		var req kmsg.Request
		if len(q.pending) > 0 {
			req = q.pending[0]
		}
		q.mu.Unlock()
		if req == nil {
			select {
			case <-q.ctx.Done():
				return
			case <-q.wake:
				continue
			}
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
		q.pending = q.pending[1:]
		q.mu.Unlock()
		if t.onResponse != nil {
			t.onResponse(q.id, req, resp)
		}
	}
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
