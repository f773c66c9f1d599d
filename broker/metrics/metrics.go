// Package metrics exposes the broker's state and traffic as Prometheus
// metrics named as Kafka's MBeans appear through jmx_exporter
// (docs/METRICS.md lists the mapping), so that Kafka dashboards and alerts
// work with few changes.
//
// Most metrics are read from existing state at scrape time (collectors.go:
// partitions, leaders, log sizes, consumer lag, connections, panic counters).
// The few counted as traffic flows (requests, bytes and messages per topic)
// are counted by Handler, which wraps the network's request handler: it sees
// every request and its response, so broker/network and broker/replica stay
// free of prometheus and no hot path of theirs changes.
package metrics

import (
	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Sources are the broker's rooms the collectors read at scrape time. Any
// may be nil; its metrics are then absent.
type Sources struct {
	Replicas *replica.Manager
	Groups   *coordhost.Host
	Network  *network.Server
	// Ready reports whether the broker has loaded its logs and coordinators;
	// before (and once Close starts) the collectors read no partition or
	// group state. nil: always.
	Ready func() bool
	// Controller reads the controller metrics (controller.go); nil: none.
	Controller func() ControllerStats
}

// Metrics is one broker's registry: the collectors over Sources, the
// traffic counters that Handler feeds, and Go's runtime collectors.
type Metrics struct {
	reg     *prometheus.Registry
	src     *Sources
	traffic *traffic
}

// New returns the metrics of one broker, in a registry of its own (never
// Prometheus's global one, so that two brokers in one process do not mix).
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), src: &src, traffic: newTraffic()}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.traffic,
		&stateCollector{src: m.src},
		&controllerCollector{src: m.src},
	)
	return m
}

// Registry is the registry to serve (promhttp.HandlerFor) or gather in tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetNetwork names the network server, created after the metrics because
// its handler is Handler's wrapper. Call it before serving /metrics.
func (m *Metrics) SetNetwork(n *network.Server) { m.src.Network = n }
