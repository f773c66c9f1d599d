package kconn

// Pool keeps one connection per destination for a broker's requests to
// other brokers (the coordinators' WriteTxnMarkers and AddPartitionsToTxn),
// as Kafka's inter-broker send threads keep one NetworkClient connection
// per node: a request reuses the destination's connection, waiting for the
// one in flight there to finish, and dials only when there is none. A
// failed round trip closes the connection (the Conn invariant) and the
// next request to that destination dials again. The owner closes the
// pool on shutdown, which closes every connection and fails the requests
// in flight.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrPoolClosed is the answer of a closed Pool.
var ErrPoolClosed = errors.New("inter-broker connection pool closed")

// defaultRoundTripTimeout bounds a round trip whose context has no deadline.
const defaultRoundTripTimeout = 30 * time.Second

// Pool is a set of connections, one per destination address, dialed with
// the same Options. Safe for concurrent use.
type Pool struct {
	opts Options
	// life ends at Close; every pooled connection closes with it.
	life   context.Context
	cancel context.CancelFunc

	mu struct {
		sync.Mutex
		dests  map[string]*dest
		closed bool
	}
}

// dest is one destination's connection. turn is held (a token in it) by
// the request using or dialing the connection: one round trip at a time.
type dest struct {
	turn chan struct{}
	conn *Conn // nil until dialed, and after a failed round trip
}

// NewPool returns an empty pool dialing with opts.
func NewPool(opts Options) *Pool {
	p := &Pool{opts: opts}
	p.life, p.cancel = context.WithCancel(context.Background())
	p.mu.dests = map[string]*dest{}
	return p
}

// RoundTrip sends req to addr on its pooled connection (dialed first if
// there is none) and returns the answer. ctx bounds the wait for the
// connection, the dial and the round trip; a round trip cut short by ctx
// closes the connection, whose stream is then out of step.
func (p *Pool) RoundTrip(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	d, err := p.dest(addr)
	if err != nil {
		return nil, err
	}
	select {
	case d.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.life.Done():
		return nil, ErrPoolClosed
	}
	defer func() { <-d.turn }()
	if d.conn == nil {
		c, err := dial(ctx, p.life, addr, p.opts)
		if err != nil {
			if p.life.Err() != nil {
				return nil, ErrPoolClosed
			}
			return nil, err
		}
		d.conn = c
	}
	timeout := defaultRoundTripTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	c := d.conn
	// ctx ending mid-trip unblocks it by closing the connection (a
	// deadline could be overwritten by the round trip's own).
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	resp, err := c.RoundTrip(req, timeout)
	if !stop() || err != nil {
		c.Close()
		d.conn = nil
		switch {
		case p.life.Err() != nil:
			return nil, ErrPoolClosed
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		return nil, err
	}
	return resp, nil
}

// dest returns addr's destination, creating it.
func (p *Pool) dest(addr string) (*dest, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return nil, ErrPoolClosed
	}
	d := p.mu.dests[addr]
	if d == nil {
		d = &dest{turn: make(chan struct{}, 1)}
		p.mu.dests[addr] = d
	}
	return d, nil
}

// Conns is how many destinations hold an open connection (for tests and
// metrics).
func (p *Pool) Conns() int {
	p.mu.Lock()
	dests := make([]*dest, 0, len(p.mu.dests))
	for _, d := range p.mu.dests {
		dests = append(dests, d)
	}
	p.mu.Unlock()
	n := 0
	for _, d := range dests {
		select {
		case d.turn <- struct{}{}:
			if d.conn != nil {
				n++
			}
			<-d.turn
		default:
			n++ // in use: a round trip or a dial holds it
		}
	}
	return n
}

// Close closes every connection; requests in flight fail and later ones
// get ErrPoolClosed. It waits for no request: each ends as its connection
// closes.
func (p *Pool) Close() {
	p.mu.Lock()
	p.mu.closed = true
	p.mu.Unlock()
	p.cancel()
}
