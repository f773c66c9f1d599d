package jwks

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

type keyServer struct {
	mu    sync.Mutex
	keys  []jose.JSONWebKey
	gets  atomic.Int32
	srv   *httptest.Server
	privs map[string]any
}

func newKeyServer(t *testing.T) *keyServer {
	ks := &keyServer{privs: map[string]any{}}
	ks.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ks.gets.Add(1)
		ks.mu.Lock()
		defer ks.mu.Unlock()
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: ks.keys})
	}))
	t.Cleanup(ks.srv.Close)
	return ks
}

func (ks *keyServer) addRSA(t *testing.T, kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keys = append(ks.keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"})
	ks.privs[kid] = k
}

func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestValidator(t *testing.T) {
	ks := newKeyServer(t)
	ks.addRSA(t, "k1")
	now := time.Unix(1_800_000_000, 0)
	var clock atomic.Int64
	clock.Store(now.Unix())
	v, err := New(Config{URL: ks.srv.URL, ExpectedAudience: []string{"kafka"}, ExpectedIssuer: "https://idp", ClockSkew: 30 * time.Second,
		Now: func() time.Time { return time.Unix(clock.Load(), 0) }})
	if err != nil {
		t.Fatal(err)
	}
	claims := func(mod func(c map[string]any)) map[string]any {
		c := map[string]any{"sub": "alice", "aud": []string{"kafka"}, "iss": "https://idp", "exp": now.Unix() + 600, "iat": now.Unix() - 10, "scope": "a b"}
		if mod != nil {
			mod(c)
		}
		return c
	}
	tok, verr := v.ValidateToken(sign(t, jose.RS256, ks.privs["k1"], "k1", claims(nil)))
	if verr != nil || tok.Principal != "alice" || strings.Join(tok.Scope, ",") != "a,b" || tok.Expires.Unix() != now.Unix()+600 {
		t.Fatalf("valid token: %+v %v", tok, verr)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, c := range []struct {
		name  string
		token string
	}{
		{"expired", sign(t, jose.RS256, ks.privs["k1"], "k1", claims(func(c map[string]any) { c["exp"] = now.Unix() - 60 }))},
		{"no exp", sign(t, jose.RS256, ks.privs["k1"], "k1", claims(func(c map[string]any) { delete(c, "exp") }))},
		{"no iat", sign(t, jose.RS256, ks.privs["k1"], "k1", claims(func(c map[string]any) { delete(c, "iat") }))},
		{"wrong audience", sign(t, jose.RS256, ks.privs["k1"], "k1", claims(func(c map[string]any) { c["aud"] = "other" }))},
		{"wrong issuer", sign(t, jose.RS256, ks.privs["k1"], "k1", claims(func(c map[string]any) { c["iss"] = "https://evil" }))},
		{"no sub", sign(t, jose.RS256, ks.privs["k1"], "k1", claims(func(c map[string]any) { delete(c, "sub") }))},
		{"other key, same kid", sign(t, jose.RS256, other, "k1", claims(nil))},
		{"unknown kid", sign(t, jose.ES256, ec, "k9", claims(nil))},
		{"unsigned", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9."},
	} {
		if tok, verr := v.ValidateToken(c.token); verr == nil || verr.Status != "invalid_token" {
			t.Errorf("%s: accepted %+v", c.name, tok)
		}
	}
	// A rotated-in key is fetched when a token names it.
	ks.addRSA(t, "k2")
	clock.Add(int64(minRefetch / time.Second))
	if tok, verr := v.ValidateToken(sign(t, jose.RS256, ks.privs["k2"], "k2", claims(nil))); verr != nil || tok.Principal != "alice" {
		t.Fatalf("rotated key: %+v %v", tok, verr)
	}
	// Unknown key ids do not make every token fetch the set.
	gets := ks.gets.Load()
	for i := 0; i < 5; i++ {
		v.ValidateToken(sign(t, jose.ES256, ec, "k9", claims(nil)))
	}
	if ks.gets.Load() != gets {
		t.Fatalf("unknown kids fetched the set %d more times within %v", ks.gets.Load()-gets, minRefetch)
	}
}

func TestFileURL(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	path := filepath.Join(t.TempDir(), "jwks.json")
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "e1", Algorithm: string(jose.ES256)}}})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := New(Config{URL: "file:" + path})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, jose.ES256, k, "e1", map[string]any{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
	if got, verr := v.ValidateToken(tok); verr != nil || got.Principal != "svc" {
		t.Fatalf("file JWKS: %+v %v", got, verr)
	}
	if _, err := New(Config{URL: "ftp://x"}); err == nil {
		t.Fatal("ftp URL accepted")
	}
}
