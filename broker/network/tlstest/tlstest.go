// Package tlstest makes certificate authorities and certificates at run
// time for tests of TLS listeners: no key or certificate is checked in.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, a truststore.
	PEM []byte
}

// Leaf is a certificate with its key.
type Leaf struct {
	// CertPEM is the certificate followed by the CA's (the chain);
	// KeyPEM the PKCS#8 private key.
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
}

// KeystorePEM is the key and chain in one file, Kafka's PEM keystore.
func (l Leaf) KeystorePEM() []byte { return append(append([]byte{}, l.KeyPEM...), l.CertPEM...) }

// TLSCertificate is the leaf as a crypto/tls certificate (for clients).
func (l Leaf) TLSCertificate() (tls.Certificate, error) { return tls.X509KeyPair(l.CertPEM, l.KeyPEM) }

// serial numbers the certificates: distinct within a process and across runs.
var serial atomic.Int64

func init() { serial.Store(time.Now().UnixNano()) }

func next() *big.Int { return big.NewInt(serial.Add(1)) }

// NewCA makes a self-signed CA named cn.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          next(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"kbroker tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Server makes a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Server(cn string) (Leaf, error) {
	return ca.leaf(pkix.Name{CommonName: cn}, x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
}

// Client makes a client certificate with subject name.
func (ca *CA) Client(name pkix.Name) (Leaf, error) {
	return ca.leaf(name, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (ca *CA) leaf(name pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: next(),
		Subject:      name,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return Leaf{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Leaf{}, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Leaf{}, err
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.PEM...)
	return Leaf{CertPEM: chain, KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), Cert: cert}, nil
}

// WriteFile writes b to dir/name with mode 0600 and returns the path.
func WriteFile(dir, name string, b []byte) (string, error) {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	return p, nil
}
