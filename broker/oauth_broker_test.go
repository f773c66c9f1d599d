package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/kbroker/kbroker/broker/network/tlstest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

func unsecuredJWS(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

func oauthPing(t *testing.T, addr, token string) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// TestOAuthBearer authenticates franz-go clients with OAUTHBEARER on two
// listeners: the unsecured JWS validator (a required scope) and the JWKS
// validator (keys from a JWKS endpoint, audience and issuer checked). A
// refused token fails with SASL_AUTHENTICATION_FAILED and Kafka's
// invalid_token JSON, after connection.failed.authentication.delay.ms.
func TestOAuthBearer(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwksSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256)}}})
	}))
	defer jwksSrv.Close()
	o := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,JWKS://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,JWKS:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-256,OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`unsecuredValidatorRequiredScope="kafka";`,
		"listener.name.jwks.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url":                                jwksSrv.URL,
		"sasl.oauthbearer.expected.audience":                                "kafka",
		"sasl.oauthbearer.expected.issuer":                                  "https://idp.test",
		"connection.failed.authentication.delay.ms":                         "300",
	}
	b := startTestBroker(t, t.TempDir(), o)
	unsecuredAddr, jwksAddr := b.Addrs()[1].String(), b.Addrs()[2].String()

	exp := time.Now().Add(time.Hour).Unix()
	if err := oauthPing(t, unsecuredAddr, unsecuredJWS(fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":"kafka"}`, exp))); err != nil {
		t.Fatalf("unsecured token: %v", err)
	}
	start := time.Now()
	err = oauthPing(t, unsecuredAddr, unsecuredJWS(fmt.Sprintf(`{"sub":"admin","exp":%d}`, exp)))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token", "scope":"kafka"}`) {
		t.Fatalf("token without the required scope: %v", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("failed authentication answered after %v, want at least connection.failed.authentication.delay.ms", took)
	}
	err = oauthPing(t, unsecuredAddr, unsecuredJWS(fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":"kafka"}`, time.Now().Add(-time.Minute).Unix())))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
		t.Fatalf("expired token: %v", err)
	}

	signed := func(claims map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := map[string]any{"sub": "svc", "aud": "kafka", "iss": "https://idp.test", "exp": exp, "iat": time.Now().Unix()}
	if err := oauthPing(t, jwksAddr, signed(good)); err != nil {
		t.Fatalf("JWKS token: %v", err)
	}
	good["aud"] = "other"
	if err := oauthPing(t, jwksAddr, signed(good)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("JWKS token for another audience: %v", err)
	}
	// An unsecured token is no good on the JWKS listener.
	if err := oauthPing(t, jwksAddr, unsecuredJWS(fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":"kafka"}`, exp))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("unsecured token on the JWKS listener: %v", err)
	}
}

// TestOAuthBearerOverTLS: OAUTHBEARER on a SASL_SSL listener, the token
// sent inside TLS.
func TestOAuthBearerOverTLS(t *testing.T) {
	ca, err := tlstest.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Server("broker")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := tlstest.WriteFile(t.TempDir(), "broker.pem", leaf.KeystorePEM())
	if err != nil {
		t.Fatal(err)
	}
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"sasl.enabled.mechanisms": "OAUTHBEARER",
		"ssl.keystore.type":       "PEM",
		"ssl.keystore.location":   ks,
		"ssl.truststore.type":     "PEM",
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	tok := unsecuredJWS(fmt.Sprintf(`{"sub":"admin","exp":%d}`, time.Now().Add(time.Hour).Unix()))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()[1].String()), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "localhost"}),
		kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("OAUTHBEARER over TLS: %v", err)
	}
}
