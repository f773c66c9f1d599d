package broker

import (
	"errors"

	"net"

	"github.com/kbroker/kbroker/broker/httpserver"
	"github.com/kbroker/kbroker/broker/metrics"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// errNotReady is /readyz's answer while the broker loads its logs and
// coordinators, before its Kafka listeners are open, and once Close starts.
var errNotReady = errors.New("logs loading or Kafka listeners not open")

// startHTTP creates the metrics and starts the HTTP listener
// (http.listeners) at the beginning of New, so that /healthz answers and
// /readyz says 503 while the logs load. It returns the API handler to give
// the network: the metrics count every request through it.
func (b *Broker) startHTTP() error {
	b.metrics = metrics.New(metrics.Sources{Replicas: b.rm, Groups: b.co, Ready: b.ready.Load, Controller: b.controllerStats})
	b.http = httpserver.New(httpserver.Config{
		Listeners: b.cfg.HTTP.Listeners,
		Pprof:     b.cfg.HTTP.PprofEnable,
		Metrics:   promhttp.HandlerFor(b.metrics.Registry(), promhttp.HandlerOpts{}),
		Ready: func() error {
			if !b.ready.Load() {
				return errNotReady
			}
			return nil
		},
		Logger: b.log,
	})
	return b.http.Start()
}

// handler is the API wrapped by the request metrics and the request log
// (requestlog.go).
func (b *Broker) handler() network.Handler { return requestLog(b.log, b.metrics.Handler(b.api)) }

// HTTPAddrs returns the bound HTTP listener addresses (useful with port 0).
func (b *Broker) HTTPAddrs() []net.Addr { return b.http.Addrs() }
