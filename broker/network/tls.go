package network

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/config"
)

// tlsSource serves the TLS configuration of one SSL or SASL_SSL listener.
// The keystore and truststore files are read at start and read again at a
// handshake after their modification time or size changed, so a renewed
// certificate is used without a restart; a file that fails to load (half
// written, say) keeps the previous configuration and is logged.
type tlsSource struct {
	cfg      *config.TLSConfig
	listener string
	log      *slog.Logger
	mapper   *principalMapper

	mu struct {
		sync.Mutex
		conf  *tls.Config
		stamp [2]fileStamp // keystore, truststore
		// failed is the last reload failure logged, so a file that stays
		// broken is logged once, not at every handshake.
		failed string
	}
}

// fileStamp identifies a version of a file; the zero value is "no file".
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	if path == "" {
		return fileStamp{}, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// newTLSSource loads the listener's certificates and parses its principal
// mapping rules; an error names what is wrong, for start-up.
func newTLSSource(l config.Listener, log *slog.Logger) (*tlsSource, error) {
	m, err := parsePrincipalRules(l.TLS.PrincipalMappingRules)
	if err != nil {
		return nil, fmt.Errorf("listener %s: ssl.principal.mapping.rules: %w", l.Name, err)
	}
	s := &tlsSource{cfg: l.TLS, listener: l.Name, log: log, mapper: m}
	stamp, err := s.stamps()
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", l.Name, err)
	}
	conf, err := s.load()
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", l.Name, err)
	}
	s.mu.conf, s.mu.stamp = conf, stamp
	return s, nil
}

func (s *tlsSource) stamps() ([2]fileStamp, error) {
	ks, err := stampOf(s.cfg.KeystoreLocation)
	if err != nil {
		return [2]fileStamp{}, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	ts, err := stampOf(s.cfg.TruststoreLocation)
	if err != nil {
		return [2]fileStamp{}, fmt.Errorf("ssl.truststore.location: %w", err)
	}
	return [2]fileStamp{ks, ts}, nil
}

// serverConfig is the tls.Config given to tls.Server: each handshake asks
// current for the configuration of the files as they are now.
func (s *tlsSource) serverConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return s.current(), nil }}
}

// current returns the configuration, reloading it first when a file changed.
func (s *tlsSource) current() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	stamp, err := s.stamps()
	if err == nil && stamp == s.mu.stamp {
		return s.mu.conf
	}
	var conf *tls.Config
	if err == nil {
		conf, err = s.load()
	}
	if err != nil {
		if msg := fmt.Sprint(stamp, err); msg != s.mu.failed {
			s.mu.failed = msg
			s.log.Warn("TLS files changed but do not load; keeping the loaded certificates", "listener", s.listener, "err", err)
		}
		return s.mu.conf
	}
	s.mu.conf, s.mu.stamp, s.mu.failed = conf, stamp, ""
	s.log.Info("TLS certificates reloaded", "listener", s.listener)
	return conf
}

// load reads the keystore and truststore and builds the configuration.
func (s *tlsSource) load() (*tls.Config, error) {
	c := s.cfg
	cert, trust, err := loadStores(c)
	if err != nil {
		return nil, err
	}
	conf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   c.MinVersion,
		MaxVersion:   c.MaxVersion,
		CipherSuites: c.CipherSuites,
		ClientCAs:    trust,
	}
	switch c.ClientAuth {
	case config.ClientAuthRequired:
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	case config.ClientAuthRequested:
		conf.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		conf.ClientAuth = tls.NoClientCert
	}
	return conf, nil
}

// loadStores reads a listener's keystore (its certificate chain and key)
// and truststore (nil when none is configured).
func loadStores(c *config.TLSConfig) (tls.Certificate, *x509.CertPool, error) {
	chain, key := normalizePEM(c.KeystoreCertificateChain), normalizePEM(c.KeystoreKey)
	if c.KeystoreLocation != "" {
		b, err := os.ReadFile(c.KeystoreLocation)
		if err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		chain, key = b, b
	}
	cert, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("keystore (PEM key and certificate chain): %w", err)
	}
	trust := normalizePEM(c.TruststoreCertificates)
	if c.TruststoreLocation != "" {
		if trust, err = os.ReadFile(c.TruststoreLocation); err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
	}
	if len(bytes.TrimSpace(trust)) == 0 {
		return cert, nil, nil
	}
	pool, err := certPool(trust)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("truststore: %w", err)
	}
	return cert, pool, nil
}

// pemBlock is one PEM block, whatever whitespace separates its parts.
var pemBlock = regexp.MustCompile(`(?s)-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END ([A-Z0-9 ]+)-----`)

// normalizePEM rewrites inline PEM values as Go's pem package reads them.
// A value written over several lines of a properties file with backslash
// continuations arrives as one line (Java's Properties, and kbroker's,
// fold the lines), which Kafka's PEM parser accepts: each block's base64
// body loses its whitespace and is wrapped at 64 columns again.
func normalizePEM(s string) []byte {
	var b bytes.Buffer
	for _, m := range pemBlock.FindAllStringSubmatch(s, -1) {
		body := strings.Join(strings.Fields(m[2]), "")
		fmt.Fprintf(&b, "-----BEGIN %s-----\n", m[1])
		for len(body) > 64 {
			b.WriteString(body[:64] + "\n")
			body = body[64:]
		}
		if body != "" {
			b.WriteString(body + "\n")
		}
		fmt.Fprintf(&b, "-----END %s-----\n", m[3])
	}
	return b.Bytes()
}

// certPool parses every CERTIFICATE block of a PEM truststore.
func certPool(b []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("no PEM certificate found")
	}
	return pool, nil
}

// tlsHandshakeTimeout bounds a TLS handshake, so a client that connects and
// sends nothing cannot hold a connection slot; connections.max.idle.ms
// bounds it too when shorter, as Kafka's idle expiry covers the handshake.
const tlsHandshakeTimeout = 10 * time.Second

// handshake runs the TLS handshake of a new connection on an SSL or
// SASL_SSL listener and, on SSL, sets the principal from the client
// certificate (Kafka's SslPrincipalMapper); a connection without a client
// certificate stays ANONYMOUS. It reports whether the connection may go on.
func (c *conn) handshake(tc *tls.Conn, src *tlsSource) bool {
	timeout := tlsHandshakeTimeout
	if idle := c.s.limits.idle; idle > 0 && idle < timeout {
		timeout = idle
	}
	_ = tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		if !c.stopping.Load() {
			c.s.log.Info("closing connection: TLS handshake failed", "client", c.addr, "listener", c.listener.Name, "err", err)
		}
		return false
	}
	_ = tc.SetDeadline(time.Time{})
	if c.stopping.Load() { // shutdown raced the handshake: keep its deadline
		_ = tc.SetReadDeadline(time.Now())
	}
	if c.listener.SecurityProtocol != config.ProtoSSL {
		return true
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return true
	}
	name, err := src.mapper.name(distinguishedName(certs[0]))
	if err != nil {
		c.s.log.Warn("closing connection: client certificate maps to no principal", "client", c.addr, "listener", c.listener.Name, "err", err)
		return false
	}
	c.principal = "User:" + name
	return true
}
