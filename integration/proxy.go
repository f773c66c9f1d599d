package integration

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy to one target that a test can cut or slow down.
// While cut it drops every connection and accepts none, so the clients
// behind it lose the target (as a paused or partitioned node does: for
// ZooKeeper, after the session timeout, their sessions expire). With a
// delay it holds every chunk of bytes it relays, in each direction, that
// long before passing it on, in order: added latency without a bandwidth
// limit. The kernel of the test machines has no netem (tc qdisc … delay),
// so the delay fault (nemesis.go) routes a broker's links through delayed
// proxies with iptables DNAT; the proxy is our own rather than toxiproxy
// because only latency is needed and toxiproxy is not among the modules
// the build may fetch.
//
// Invariant: after Close returns, no goroutine of the proxy runs and
// every connection it made or accepted is closed.
type Proxy struct {
	Addr   string // where it listens
	target string
	delay  time.Duration
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	cut    bool
	closed bool
	conns  map[net.Conn]bool
}

// StartProxy proxies from a loopback port to target, without delay, until
// the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := listenProxy("127.0.0.1", target, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// listenProxy listens on host (a free port) and relays each accepted
// connection to target with delay each way (0: none).
func listenProxy(host, target string, delay time.Duration) (*Proxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, delay: delay, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.cut || p.closed
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut || p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe relays src to dst (each chunk delay after it was read, with a
// delay); when either side fails it closes both.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	if p.delay == 0 {
		_, _ = io.Copy(dst, bufio.NewReader(src))
	} else {
		p.delayed(dst, src)
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// chunk is bytes read at a time, to be written when due.
type chunk struct {
	due  time.Time
	data []byte
}

// delayed relays src to dst, each chunk delay after it was read, until
// either side fails.
func (p *Proxy) delayed(dst, src net.Conn) {
	q := make(chan chunk, 256)
	done := make(chan struct{})
	go func() { // the writer, owned by delayed, which waits for it
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
}

// Cut drops every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops the proxy, closes every connection and waits for its
// goroutines. It may be called more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
