package network

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/broker/config"
)

// ClientTLS is the TLS configuration this broker's own connections to other
// brokers use on an SSL or SASL_SSL inter-broker listener, as Kafka's
// broker-side clients use the listener's ssl.* settings: the keystore is
// the client certificate (for ssl.client.auth), the truststore verifies the
// peer (the system roots when none is configured), and with
// ssl.endpoint.identification.algorithm=https (the default) the peer's
// certificate must name the host dialed; empty skips only that check.
// Unlike the listener's, it is read once: a renewed certificate reaches
// the inter-broker connections at the next restart.
func ClientTLS(c *config.TLSConfig) (*tls.Config, error) {
	if c == nil {
		return nil, errors.New("the inter-broker listener has no ssl.* configuration")
	}
	cert, trust, err := loadStores(c)
	if err != nil {
		return nil, fmt.Errorf("inter-broker TLS: %w", err)
	}
	conf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      trust,
		MinVersion:   c.MinVersion,
		MaxVersion:   c.MaxVersion,
		CipherSuites: c.CipherSuites,
	}
	if !c.EndpointIdentification {
		// Verify the chain as usual, only not the host name.
		conf.InsecureSkipVerify = true
		conf.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: trust, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return conf, nil
}
