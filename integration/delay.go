package integration

import (
	"net"
	"sync"
	"time"
)

// delayProxy is a TCP proxy that holds every chunk of bytes it relays, in
// each direction, for a fixed delay before passing it on, in order: added
// latency without a bandwidth limit. The kernel of the test machines has
// no netem (tc qdisc … delay), so the delay fault (nemesis.go) routes a
// broker's links through these proxies with iptables DNAT. It is a few
// dozen lines of our own rather than toxiproxy because only latency is
// needed and toxiproxy is not among the modules the build may fetch.
//
// Invariant: after Close returns, no goroutine of the proxy runs and
// every connection it made or accepted is closed.
type delayProxy struct {
	Addr   string // where it listens
	target string
	delay  time.Duration
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool
}

// startDelayProxy listens on host (a free port) and relays each accepted
// connection to target with delay each way.
func startDelayProxy(host, target string, delay time.Duration) (*delayProxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	p := &delayProxy{Addr: ln.Addr().String(), target: target, delay: delay, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *delayProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// chunk is bytes read at a time, to be written delay later.
type chunk struct {
	due  time.Time
	data []byte
}

// pipe relays src to dst, each chunk delay after it was read; when either
// side fails it closes both.
func (p *delayProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 256)
	done := make(chan struct{})
	go func() { // the writer: owned by pipe, which waits for it
		defer close(done)
		for c := range q {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d) // the fault's latency itself
			}
			if _, err := dst.Write(c.data); err != nil {
				src.Close() // unblock the reader
				for range q {
				}
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{time.Now().Add(p.delay), append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. It may be called more than once.
func (p *delayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
