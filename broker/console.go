package broker

import (
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/console"
)

// errNoConsoleListener: the console is a Kafka client without credentials.
var errNoConsoleListener = errors.New("the web console needs a PLAINTEXT listener on this broker (SASL and SSL listeners are not supported by the console yet)")

// newConsole creates the web console (http.console.enable) for the HTTP
// server to serve at /; nil when disabled.
func (b *Broker) newConsole() (http.Handler, error) {
	if !b.cfg.HTTP.ConsoleEnable || len(b.cfg.HTTP.Listeners) == 0 {
		return nil, nil
	}
	c, err := console.New(console.Config{
		Bootstrap: b.consoleBootstrap,
		Metrics:   b.metrics.Registry(),
		Logger:    b.log,
	})
	if err != nil {
		return nil, err
	}
	b.console = c
	return c.Handler(), nil
}

// consoleBootstrap is the address of this broker's first PLAINTEXT Kafka
// listener as the console dials it (a wildcard bind becomes loopback). It
// fails until Start opened the listeners and once Close began: ready is
// set after b.net exists, so reading b.net here is ordered after its write.
func (b *Broker) consoleBootstrap() (string, error) {
	if !b.ready.Load() {
		return "", errNotReady
	}
	addrs := b.Addrs()
	for i, l := range b.cfg.Listeners {
		if l.IsSASL() || l.SecurityProtocol == config.ProtoSSL || i >= len(addrs) {
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
		return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port)), nil
	}
	return "", errNoConsoleListener
}

// closeConsole closes the console's Kafka client before the listeners
// close, so that its connections are not in-flight requests to wait for.
func (b *Broker) closeConsole() {
	if b.console != nil {
		b.console.Close()
	}
}
