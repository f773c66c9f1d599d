package network

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/kbroker/kbroker/broker/config"
)

// CheckTLS reports whether a TLS listener configuration loads (its key and
// trust store files read and parse), without using it: a dynamic change of
// a listener's ssl.keystore.location is refused, not half applied, when the
// new files are unusable, as Kafka validates a new keystore before it
// reconfigures the listener.
func CheckTLS(l config.Listener) error {
	if l.TLS == nil {
		return fmt.Errorf("listener %s has no TLS configuration", l.Name)
	}
	s := &tlsSource{cfg: l.TLS, listener: l.Name}
	if _, err := s.load(); err != nil {
		return fmt.Errorf("listener %s: %w", l.Name, err)
	}
	return nil
}

// ReconfigureTLS switches a running TLS listener to a new configuration
// (new key or trust store files): the next handshake uses it, established
// connections keep theirs. Afterwards the new files are watched for changes
// as the old ones were.
func (s *Server) ReconfigureTLS(l config.Listener) error {
	s.mu.Lock()
	src := s.tls[l.Name]
	s.mu.Unlock()
	if src == nil {
		return fmt.Errorf("listener %s is not a running TLS listener", l.Name)
	}
	if l.TLS == nil {
		return fmt.Errorf("listener %s has no TLS configuration", l.Name)
	}
	next := &tlsSource{cfg: l.TLS, listener: l.Name}
	stamp, err := next.stamps()
	if err != nil {
		return fmt.Errorf("listener %s: %w", l.Name, err)
	}
	conf, err := next.load()
	if err != nil {
		return fmt.Errorf("listener %s: %w", l.Name, err)
	}
	src.mu.Lock()
	src.cfg = l.TLS
	src.mu.conf, src.mu.stamp, src.mu.failed = conf, stamp, ""
	src.mu.Unlock()
	s.log.Info("TLS listener reconfigured", "listener", l.Name, "keystore", l.TLS.KeystoreLocation, "truststore", l.TLS.TruststoreLocation)
	return nil
}

// ServerTLSConfig is the server TLS configuration of a listener that is not
// a Kafka listener (the HTTP server's https:// listeners, named name in
// logs): tc's certificates, protocols, cipher suites and ssl.client.auth,
// with the key and trust store files read again at the first handshake
// after they change, as on an SSL listener. An error names what does not
// load, for start-up.
func ServerTLSConfig(name string, tc *config.TLSConfig, log *slog.Logger) (*tls.Config, error) {
	if tc == nil {
		return nil, fmt.Errorf("listener %s has no TLS configuration", name)
	}
	if log == nil {
		log = slog.Default()
	}
	src, err := newTLSSource(config.Listener{Name: name, TLS: tc}, log)
	if err != nil {
		return nil, err
	}
	return src.serverConfig(), nil
}
