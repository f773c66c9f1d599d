package config

// TLS configuration of SSL and SASL_SSL listeners, with Kafka's ssl.*
// property names. Each property may be set for one listener as
// listener.name.<l>.ssl.X, which wins over ssl.X (Kafka's listener prefix).
//
//	ssl.keystore.type                 PEM (Kafka's default JKS, and PKCS12, are refused: no maintained Go reader)
//	ssl.keystore.location             a PEM file holding the private key and the certificate chain
//	ssl.keystore.certificate.chain    the chain inline (PEM), with ssl.keystore.key
//	ssl.keystore.key                  the private key inline (PEM, unencrypted)
//	ssl.truststore.type               PEM
//	ssl.truststore.location           a PEM file of CA certificates client certificates must chain to
//	ssl.truststore.certificates       the same inline
//	ssl.client.auth                   none (default), requested, required
//	ssl.enabled.protocols             TLSv1.2,TLSv1.3 (default)
//	ssl.cipher.suites                 IANA names (Kafka's); empty: Go's defaults
//	ssl.principal.mapping.rules       DEFAULT, or RULE:pattern/replacement/[LU],...
//
// As in Kafka (KIP-684), ssl.client.auth applies to a SASL_SSL listener only
// when it is set with that listener's prefix. The keystore and truststore
// files are read when the listener starts and again whenever their
// modification time or size changes (broker/network/tls.go). ssl.* values
// are kept out of the props table: ssl.keystore.key and ssl.key.password
// are secrets DescribeConfigs must never return.

import (
	"crypto/tls"
	"fmt"
	"strings"
)

const (
	// ProtoSSL and ProtoSASLSSL are the security protocols that run over TLS.
	ProtoSSL     = "SSL"
	ProtoSASLSSL = "SASL_SSL"

	// Client authentication modes (ssl.client.auth).
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"

	sslPrefix = "ssl."
)

// TLSConfig is the resolved ssl.* configuration of one SSL or SASL_SSL
// listener. Invariant (after ParseConfig): exactly one of KeystoreLocation
// and KeystoreCertificateChain+KeystoreKey is set, and the types are PEM.
type TLSConfig struct {
	KeystoreLocation         string
	KeystoreCertificateChain string
	KeystoreKey              string
	TruststoreLocation       string
	TruststoreCertificates   string
	// ClientAuth is none, requested or required.
	ClientAuth string
	// MinVersion and MaxVersion are the crypto/tls versions of
	// ssl.enabled.protocols.
	MinVersion, MaxVersion uint16
	// CipherSuites are the TLS 1.2 suites of ssl.cipher.suites (TLS 1.3
	// suites are not configurable in Go and are accepted and ignored); nil
	// is Go's default list.
	CipherSuites []uint16
	// PrincipalMappingRules is ssl.principal.mapping.rules, parsed by the
	// listener (broker/network/tls_principal.go).
	PrincipalMappingRules string
	// EndpointIdentification is ssl.endpoint.identification.algorithm=https
	// (Kafka's default; empty turns it off): this broker's connections to
	// other brokers check that the peer's certificate names the host.
	EndpointIdentification bool
}

// isSSLKey reports whether k is an ssl.* property (global or with a
// listener prefix), handled here rather than in the props table.
func isSSLKey(k string) bool {
	if strings.HasPrefix(k, sslPrefix) {
		return true
	}
	_, rest, ok := listenerKey(k)
	return ok && strings.HasPrefix(rest, sslPrefix)
}

// resolveTLS sets the TLS configuration of every SSL and SASL_SSL listener
// from the properties p.
func (c *Config) resolveTLS(p map[string]string) error {
	perListener := map[string]map[string]string{}
	for k, v := range p {
		name, rest, ok := listenerKey(k)
		if !ok || !strings.HasPrefix(rest, sslPrefix) {
			continue
		}
		if perListener[name] == nil {
			perListener[name] = map[string]string{}
		}
		perListener[name][rest] = v
	}
	for i, l := range c.Listeners {
		if l.SecurityProtocol != ProtoSSL && l.SecurityProtocol != ProtoSASLSSL {
			continue
		}
		get := func(key string) (v, from string, set bool) {
			if v, ok := perListener[l.Name][key]; ok {
				return strings.TrimSpace(v), listenerKeyPrefix + strings.ToLower(l.Name) + "." + key, true
			}
			if v, ok := p[key]; ok && !(key == "ssl.client.auth" && l.SecurityProtocol == ProtoSASLSSL) {
				return strings.TrimSpace(v), key, true
			}
			return "", key, false
		}
		tc, err := parseTLS(get)
		if err != nil {
			return fmt.Errorf("listener %s (%s): %w", l.Name, l.SecurityProtocol, err)
		}
		c.Listeners[i].TLS = tc
	}
	return nil
}

// parseTLS builds one listener's TLSConfig; get returns a property's value,
// the name it was set under (for errors) and whether it was set.
func parseTLS(get func(key string) (v, from string, set bool)) (*TLSConfig, error) {
	tc := &TLSConfig{ClientAuth: ClientAuthNone, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
	for _, store := range []string{"ssl.keystore.type", "ssl.truststore.type"} {
		v, from, set := get(store)
		if !set {
			v = "JKS" // Kafka's default
		}
		if !strings.EqualFold(v, "PEM") {
			return nil, fmt.Errorf("config %s: store type %s is not supported by kbroker (no maintained Go library reads JKS or PKCS12 stores); set %[1]s=PEM and give PEM files", from, v)
		}
	}
	tc.KeystoreLocation, _, _ = get("ssl.keystore.location")
	tc.KeystoreCertificateChain, _, _ = get("ssl.keystore.certificate.chain")
	tc.KeystoreKey, _, _ = get("ssl.keystore.key")
	tc.TruststoreLocation, _, _ = get("ssl.truststore.location")
	tc.TruststoreCertificates, _, _ = get("ssl.truststore.certificates")
	inline := tc.KeystoreCertificateChain != "" || tc.KeystoreKey != ""
	switch {
	case tc.KeystoreLocation != "" && inline:
		return nil, fmt.Errorf("config ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key are both set; give one")
	case tc.KeystoreLocation == "" && !inline:
		return nil, fmt.Errorf("config ssl.keystore.location (or ssl.keystore.certificate.chain with ssl.keystore.key) is required on a TLS listener")
	case inline && (tc.KeystoreCertificateChain == "" || tc.KeystoreKey == ""):
		return nil, fmt.Errorf("config ssl.keystore.certificate.chain and ssl.keystore.key must be set together")
	}
	if tc.TruststoreLocation != "" && tc.TruststoreCertificates != "" {
		return nil, fmt.Errorf("config ssl.truststore.location and ssl.truststore.certificates are both set; give one")
	}
	if v, from, set := get("ssl.key.password"); set && v != "" {
		return nil, fmt.Errorf("config %s: encrypted private keys are not supported by kbroker; give an unencrypted PEM key (file mode 0600)", from)
	}
	if v, from, set := get("ssl.client.auth"); set {
		switch strings.ToLower(v) {
		case ClientAuthNone, ClientAuthRequested, ClientAuthRequired:
			tc.ClientAuth = strings.ToLower(v)
		default:
			return nil, fmt.Errorf("config %s: %q is not none, requested or required", from, v)
		}
	}
	if tc.ClientAuth != ClientAuthNone && tc.TruststoreLocation == "" && tc.TruststoreCertificates == "" {
		return nil, fmt.Errorf("config ssl.client.auth=%s needs ssl.truststore.location or ssl.truststore.certificates", tc.ClientAuth)
	}
	if v, from, set := get("ssl.enabled.protocols"); set {
		lo, hi, err := parseTLSProtocols(v)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", from, err)
		}
		tc.MinVersion, tc.MaxVersion = lo, hi
	}
	if v, from, set := get("ssl.cipher.suites"); set && v != "" {
		suites, err := parseCipherSuites(v)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", from, err)
		}
		tc.CipherSuites = suites
	}
	tc.PrincipalMappingRules, _, _ = get("ssl.principal.mapping.rules")
	tc.EndpointIdentification = true
	if v, from, set := get("ssl.endpoint.identification.algorithm"); set {
		switch strings.ToLower(v) {
		case "":
			tc.EndpointIdentification = false
		case "https":
		default:
			return nil, fmt.Errorf("config %s: %q is not https or empty", from, v)
		}
	}
	return tc, nil
}

// parseTLSProtocols maps ssl.enabled.protocols onto a version range. Go
// enables a contiguous range, so TLSv1.2 and TLSv1.3 in any combination
// work; TLSv1, TLSv1.1 and SSLv3 are refused (Kafka disables them too).
func parseTLSProtocols(v string) (lo, hi uint16, err error) {
	for _, p := range SplitList(v) {
		var ver uint16
		switch p {
		case "TLSv1.2":
			ver = tls.VersionTLS12
		case "TLSv1.3":
			ver = tls.VersionTLS13
		default:
			return 0, 0, fmt.Errorf("protocol %q is not supported (TLSv1.2, TLSv1.3)", p)
		}
		if lo == 0 || ver < lo {
			lo = ver
		}
		if ver > hi {
			hi = ver
		}
	}
	if lo == 0 {
		return 0, 0, fmt.Errorf("no protocol enabled")
	}
	return lo, hi, nil
}

// parseCipherSuites maps IANA cipher suite names (the names Java and Kafka
// use) onto Go's suite ids. TLS 1.3 suites are always on in Go; naming them
// is accepted. Insecure suites are refused.
func parseCipherSuites(v string) ([]uint16, error) {
	ids := map[string]uint16{}
	tls13 := map[string]bool{}
	for _, s := range tls.CipherSuites() {
		for _, ver := range s.SupportedVersions {
			if ver == tls.VersionTLS13 {
				tls13[s.Name] = true
			}
		}
		if !tls13[s.Name] {
			ids[s.Name] = s.ID
		}
	}
	var out []uint16
	for _, name := range SplitList(v) {
		if tls13[name] {
			continue
		}
		id, ok := ids[name]
		if !ok {
			return nil, fmt.Errorf("cipher suite %q is unknown or insecure", name)
		}
		out = append(out, id)
	}
	if out == nil {
		// Only TLS 1.3 suites named: TLS 1.2 would have none; Go's
		// defaults are the nearest meaning.
		return nil, nil
	}
	return out, nil
}
