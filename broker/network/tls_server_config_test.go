package network

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
)

// TestServerTLSConfig: the configuration of a non-Kafka listener (the HTTP
// server's https://) serves the keystore and applies ssl.client.auth as an
// SSL listener does; a keystore that does not load is a start-up error.
func TestServerTLSConfig(t *testing.T) {
	f := newTLSFixture(t)
	conf, err := ServerTLSConfig("HTTP", f.config(config.ClientAuthRequired), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", conf)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() { // accepts the two connections below, handshaking each
		defer close(done)
		for range 2 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	client, err := f.ca.Client(pkix.Name{CommonName: "scraper"})
	if err != nil {
		t.Fatal(err)
	}
	handshake := func(cc *tls.Config) error {
		c, err := tls.Dial("tcp", ln.Addr().String(), cc)
		if err != nil {
			return err
		}
		defer c.Close()
		// TLS 1.3 reports a refused client certificate at the first read;
		// an accepted connection reads EOF when the server closes it.
		if _, err = c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if err := handshake(clientConf(f.ca, &client)); err != nil {
		t.Errorf("with a client certificate: %v", err)
	}
	if err := handshake(clientConf(f.ca, nil)); err == nil {
		t.Error("without a client certificate: handshake accepted under ssl.client.auth=required")
	}
	<-done

	bad := f.config(config.ClientAuthNone)
	bad.KeystoreLocation = f.trust // a certificate without its key
	if _, err := ServerTLSConfig("HTTP", bad, nil); err == nil || !strings.Contains(err.Error(), "HTTP") {
		t.Errorf("a keystore without a key: %v", err)
	}
}
