package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/httpserver"
	"github.com/kbroker/kbroker/broker/metrics"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/network/sasl"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// errNotReady is /readyz's answer while the broker loads its logs and
// coordinators, before its Kafka listeners are open, and once Close starts.
// In a cluster the broker is ready only once the controller lists it as
// live and it is in the ISR of every partition it follows under a live
// leader (metacache.Snapshot.CaughtUp).
var errNotReady = errors.New("logs loading or Kafka listeners not open")

// startHTTP creates the metrics and starts the HTTP listener
// (http.listeners) at the beginning of New, so that /healthz answers and
// /readyz says 503 while the logs load. It returns the API handler to give
// the network: the metrics count every request through it.
func (b *Broker) startHTTP() error {
	b.metrics = metrics.New(metrics.Sources{Replicas: b.rm, Groups: b.co, Ready: b.ready.Load, Controller: b.controllerStats})
	consoleHandler, consoleErr := b.newConsole() // console.go
	tlsConf, auth, secErr := b.httpSecurity()
	b.http = httpserver.New(httpserver.Config{
		Listeners: b.cfg.HTTP.Listeners,
		Pprof:     b.cfg.HTTP.PprofEnable,
		Metrics:   promhttp.HandlerFor(b.metrics.Registry(), promhttp.HandlerOpts{}),
		Ready: func() error {
			if !b.ready.Load() {
				return errNotReady
			}
			// b.cluster was set before ready (an atomic store) became true.
			if b.cluster != nil {
				return b.cluster.cache.Snapshot().CaughtUp(b.cfg.NodeID)
			}
			return nil
		},
		Console: consoleHandler,
		TLS:     tlsConf,
		Auth:    auth,
		Logger:  b.log,
	})
	if err := errors.Join(consoleErr, secErr); err != nil { // after b.http exists: New's cleanup closes it
		return err
	}
	return b.http.Start()
}

// httpSecurity is the TLS configuration of the https:// HTTP listeners
// (nil without one) and, with http.authentication=basic, the check of
// Basic logins against the broker's PLAIN users and SCRAM credentials.
// The metadata store opens after the HTTP listener, so a SCRAM user can log
// in only once the broker is ready (ready is set after b.store is written);
// PLAIN users, from the configuration, can from the start.
func (b *Broker) httpSecurity() (*tls.Config, *httpserver.BasicAuth, error) {
	var tlsConf *tls.Config
	if tc := b.cfg.HTTP.TLS; tc != nil {
		var err error
		if tlsConf, err = network.ServerTLSConfig("HTTP", tc, b.log); err != nil {
			return nil, nil, fmt.Errorf("http.listeners: %w", err)
		}
	}
	if b.cfg.HTTP.Authentication != config.HTTPAuthBasic {
		return tlsConf, nil, nil
	}
	return tlsConf, b.basicAuth(), nil
}

// basicAuth checks HTTP Basic logins against the broker's PLAIN users and
// SCRAM credentials (the HTTP listener's and the Schema Registry's).
func (b *Broker) basicAuth() *httpserver.BasicAuth {
	scram := func(user, mechanism string) (sasl.Credential, bool) {
		if !b.ready.Load() {
			return sasl.Credential{}, false
		}
		c, ok := b.store.ScramCredential(user, mechanism)
		return sasl.Credential(c), ok
	}
	delay := time.Duration(b.cfg.SASL.FailedAuthenticationDelayMs) * time.Millisecond
	users := sasl.NewPasswords(b.cfg.SASL.PlainUsers, scram)
	return &httpserver.BasicAuth{Check: users.Check, FailureDelay: delay}
}

// handler is the API wrapped by the client quotas (quotas.go), the request
// metrics and the request log (requestlog.go).
func (b *Broker) handler() network.Handler {
	return requestLog(b.log, b.metrics.Handler(b.startGate(b.quotaHandler(b.api))))
}

// HTTPAddrs returns the bound HTTP listener addresses (useful with port 0).
func (b *Broker) HTTPAddrs() []net.Addr { return b.http.Addrs() }
