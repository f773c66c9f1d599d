package broker

import (
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/console"
)

// errNoConsoleListener: the console is a Kafka client without TLS, and
// with SASL only when it has credentials.
var errNoConsoleListener = errors.New("the web console needs a PLAINTEXT listener on this broker, or a SASL_PLAINTEXT one and http.console.sasl.* credentials (it does not speak TLS yet)")

// newConsole creates the web console (http.console.enable) for the HTTP
// server to serve at /; nil when disabled.
func (b *Broker) newConsole() (http.Handler, error) {
	if !b.cfg.HTTP.ConsoleEnable || len(b.cfg.HTTP.Listeners) == 0 {
		return nil, nil
	}
	c, err := console.New(console.Config{
		Bootstrap: b.consoleBootstrap,
		Metrics:   b.metrics.Registry(),
		RestProxy: b.restProxyURL, // restproxy.go
		SchemaRegistry: func() string {
			u, err := b.restProxyRegistry() // restproxy.go: schema.registry.url, else our own
			if err != nil {
				return ""
			}
			return u
		},
		Logger: b.log,
	})
	if err != nil {
		return nil, err
	}
	b.console = c
	return c.Handler(), nil
}

// consoleBootstrap is the listener the console dials (a wildcard bind
// becomes loopback): with http.console.sasl.* the first SASL_PLAINTEXT
// listener, with those credentials, else the first PLAINTEXT one. It
// fails until Start opened the listeners and once Close began: ready is
// set after b.net exists, so reading b.net here is ordered after its write.
func (b *Broker) consoleBootstrap() (console.Endpoint, error) {
	if !b.ready.Load() {
		return console.Endpoint{}, errNotReady
	}
	cs := b.cfg.HTTP.ConsoleSASL
	mech, err := saslMechanism(cs.Mechanism, cs.Username, cs.Password)
	if err != nil {
		return console.Endpoint{}, err
	}
	if addr, ok := b.loopbackListener(mech != nil); ok {
		return console.Endpoint{Addr: addr, SASL: mech}, nil
	}
	return console.Endpoint{}, errNoConsoleListener
}

// loopbackListener is the address of the first listener without TLS,
// SASL_PLAINTEXT or PLAINTEXT as sasl says, as a client on this host dials
// it (a wildcard bind becomes 127.0.0.1).
func (b *Broker) loopbackListener(sasl bool) (string, bool) {
	addrs := b.Addrs()
	for i, l := range b.cfg.Listeners {
		if l.SecurityProtocol == config.ProtoSSL || l.SecurityProtocol == config.ProtoSASLSSL || i >= len(addrs) {
			continue
		}
		if l.IsSASL() != sasl {
			continue
		}
		tcp, ok := addrs[i].(*net.TCPAddr)
		if !ok {
			continue
		}
		ip := tcp.IP
		if ip.IsUnspecified() { // 0.0.0.0 or [::], which also accepts IPv4
			ip = net.IPv4(127, 0, 0, 1)
		}
		return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port)), true
	}
	return "", false
}

// closeConsole closes the console's Kafka client before the listeners
// close, so that its connections are not in-flight requests to wait for.
func (b *Broker) closeConsole() {
	if b.console != nil {
		b.console.Close()
	}
}
