package zkcontroller

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
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

// TCPChannel is a Channel over plain TCP with Kafka framing, one connection
// per broker. Requests are framed with kmsg (request header v1, v2 for
// flexible versions) and answers decoded into the request's ResponseKind.
type TCPChannel struct {
	clientID   string
	log        *slog.Logger
	onResponse ResponseFunc
	backoff    time.Duration
	timeout    time.Duration

	mu     sync.Mutex
	queues map[int32]*brokerQueue
	closed bool
}

// NewTCPChannel returns a channel naming itself clientID
// ("controller-<id>"), calling onResponse (may be nil) for every answer.
func NewTCPChannel(clientID string, log *slog.Logger, onResponse ResponseFunc) *TCPChannel {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &TCPChannel{clientID: clientID, log: log, onResponse: onResponse,
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
	var conn net.Conn
	var unwatch func() bool
	closeConn := func() {
		if conn != nil {
			unwatch()
			conn.Close()
			conn = nil
		}
	}
	defer closeConn()
	var corr int32
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
			d := net.Dialer{Timeout: 5 * time.Second}
			c, err := d.DialContext(q.ctx, "tcp", q.addr)
			if err != nil {
				if !t.sleep(q) {
					return
				}
				continue
			}
			conn = c
			unwatch = context.AfterFunc(q.ctx, func() { c.Close() })
		}
		corr++
		resp, err := roundTrip(conn, t.clientID, req, corr, t.timeout)
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

// maxResponse bounds a controller response; a larger size prefix means a
// corrupt stream.
const maxResponse = 100 << 20

// roundTrip writes one framed request and reads its answer.
func roundTrip(conn net.Conn, clientID string, req kmsg.Request, corr int32, timeout time.Duration) (kmsg.Response, error) {
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	buf := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, corr)
	if _, err := conn.Write(buf); err != nil {
		return nil, fmt.Errorf("writing %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	r := bufio.NewReader(conn)
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, fmt.Errorf("reading %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > maxResponse {
		return nil, fmt.Errorf("%s response size %d out of range", kmsg.NameForKey(req.Key()), n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("reading %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	b := kbin.Reader{Src: body}
	if got := b.Int32(); got != corr {
		return nil, fmt.Errorf("%s response has correlation id %d, want %d", kmsg.NameForKey(req.Key()), got, corr)
	}
	if req.IsFlexible() {
		kmsg.SkipTags(&b)
	}
	if !b.Ok() {
		return nil, fmt.Errorf("%s response header truncated", kmsg.NameForKey(req.Key()))
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(b.Src); err != nil {
		return nil, fmt.Errorf("decoding %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// ErrNoEndpoint reports a broker without the inter-broker listener.
var ErrNoEndpoint = errors.New("broker has no endpoint on the inter-broker listener")

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// RoundTrip sends one request on conn and reads its answer (correlation id
// 1), within timeout: for one-off broker → controller requests such as
// ControlledShutdown.
func RoundTrip(conn net.Conn, clientID string, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	return roundTrip(conn, clientID, req, 1, timeout)
}
