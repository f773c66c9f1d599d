// Package jwks validates OAUTHBEARER tokens as Kafka's
// OAuthBearerValidatorCallbackHandler does: a signed JWT (any algorithm but
// none) verified against the keys of a JWKS endpoint
// (sasl.oauthbearer.jwks.endpoint.url, https:// or file:), with exp and
// iat required, the expected audience and issuer when configured, the
// principal from sasl.oauthbearer.sub.claim.name and the scope from
// sasl.oauthbearer.scope.claim.name, within
// sasl.oauthbearer.clock.skew.seconds. The key set is fetched on first use,
// again after sasl.oauthbearer.jwks.endpoint.refresh.ms, and at once (at
// most every minRefetch) when a token names a key id the set lacks, so a
// key rotation needs no restart. It starts no goroutine: fetches happen in
// the authenticating connection's goroutine.
package jwks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/kbroker/kbroker/broker/network/sasl"
)

// Config is the validator's settings (Kafka's names in the comments).
type Config struct {
	// URL is sasl.oauthbearer.jwks.endpoint.url.
	URL string
	// Refresh is sasl.oauthbearer.jwks.endpoint.refresh.ms (default 1 h).
	Refresh time.Duration
	// ExpectedAudience is sasl.oauthbearer.expected.audience: when set, the
	// aud claim must name one of them.
	ExpectedAudience []string
	// ExpectedIssuer is sasl.oauthbearer.expected.issuer: when set, iss must equal it.
	ExpectedIssuer string
	// SubClaim is sasl.oauthbearer.sub.claim.name (default sub).
	SubClaim string
	// ScopeClaim is sasl.oauthbearer.scope.claim.name (default scope).
	ScopeClaim string
	// ClockSkew is sasl.oauthbearer.clock.skew.seconds (default 30 s).
	ClockSkew time.Duration
	// Now is the clock; Client fetches https URLs (defaults when nil).
	Now    func() time.Time
	Client *http.Client
}

// minRefetch bounds how often an unknown key id makes the set be fetched again.
const minRefetch = 10 * time.Second

// algorithms are the signature algorithms accepted: all but none, as
// Kafka's AlgorithmConstraints.DISALLOW_NONE.
var algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA, jose.HS256, jose.HS384, jose.HS512,
}

// Validator is a sasl.OAuthValidator over a JWKS endpoint. Safe for
// concurrent use.
type Validator struct {
	cfg Config
	mu  struct {
		sync.Mutex
		keys    *jose.JSONWebKeySet
		fetched time.Time
	}
}

// New checks cfg and returns the validator; nothing is fetched yet.
func New(cfg Config) (*Validator, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "file") {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %q is not an https:// or file: URL", cfg.URL)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Hour
	}
	if cfg.SubClaim == "" {
		cfg.SubClaim = "sub"
	}
	if cfg.ScopeClaim == "" {
		cfg.ScopeClaim = "scope"
	}
	if cfg.ClockSkew < 0 {
		cfg.ClockSkew = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Validator{cfg: cfg}, nil
}

// fetch reads the key set from the endpoint.
func (v *Validator) fetch() (*jose.JSONWebKeySet, error) {
	var body []byte
	u, _ := url.Parse(v.cfg.URL)
	if u.Scheme == "file" {
		path := u.Path
		if path == "" {
			path = u.Opaque
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading JWKS %s: %w", v.cfg.URL, err)
		}
		body = b
	} else {
		resp, err := v.cfg.Client.Get(v.cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("fetching JWKS: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetching JWKS %s: HTTP %s", v.cfg.URL, resp.Status)
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("fetching JWKS %s: %w", v.cfg.URL, err)
		}
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", v.cfg.URL, err)
	}
	return &set, nil
}

// keys returns the key set, fetched again when stale or when force is set
// (an unknown key id) and minRefetch has passed.
func (v *Validator) keys(force bool) (*jose.JSONWebKeySet, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.cfg.Now()
	age := now.Sub(v.mu.fetched)
	if v.mu.keys != nil && age < v.cfg.Refresh && (!force || age < minRefetch) {
		return v.mu.keys, nil
	}
	set, err := v.fetch()
	if err != nil {
		if v.mu.keys != nil {
			return v.mu.keys, nil // keep serving the keys we have
		}
		return nil, err
	}
	v.mu.keys, v.mu.fetched = set, now
	return set, nil
}

func invalid(format string, args ...any) *sasl.OAuthError {
	return &sasl.OAuthError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// ValidateToken implements sasl.OAuthValidator.
func (v *Validator) ValidateToken(token string) (sasl.OAuthToken, *sasl.OAuthError) {
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return sasl.OAuthToken{}, invalid("Could not validate the access token: %v", err)
	}
	kid := ""
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	var std jwt.Claims
	var all map[string]any
	for attempt := 0; ; attempt++ {
		set, err := v.keys(attempt > 0)
		if err != nil {
			return sasl.OAuthToken{}, invalid("Could not validate the access token: %v", err)
		}
		if kid != "" && len(set.Key(kid)) == 0 && attempt == 0 {
			continue // a key we have not seen: fetch the set again once
		}
		err = tok.Claims(set, &std, &all)
		if err == nil {
			break
		}
		return sasl.OAuthToken{}, invalid("Could not validate the access token: %v", err)
	}
	now := v.cfg.Now()
	if std.Expiry == nil {
		return sasl.OAuthToken{}, invalid("No expiration time (exp) in the access token")
	}
	if std.IssuedAt == nil {
		return sasl.OAuthToken{}, invalid("No issued-at time (iat) in the access token")
	}
	exp := jwt.Expected{Issuer: v.cfg.ExpectedIssuer, AnyAudience: jwt.Audience(v.cfg.ExpectedAudience), Time: now}
	if err := std.ValidateWithLeeway(exp, v.cfg.ClockSkew); err != nil {
		return sasl.OAuthToken{}, invalid("Could not validate the access token: %v", err)
	}
	sub, _ := all[v.cfg.SubClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return sasl.OAuthToken{}, invalid("The %s claim is missing or empty", v.cfg.SubClaim)
	}
	scope, err := scopeOf(all[v.cfg.ScopeClaim])
	if err != nil {
		return sasl.OAuthToken{}, invalid("The %s claim: %v", v.cfg.ScopeClaim, err)
	}
	return sasl.OAuthToken{Principal: sub, Scope: scope, Expires: std.Expiry.Time()}, nil
}

func scopeOf(raw any) ([]string, error) {
	switch s := raw.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(s), nil
	case []any:
		out := make([]string, 0, len(s))
		for _, e := range s {
			str, ok := e.(string)
			if !ok {
				return nil, errors.New("holds a non-string")
			}
			out = append(out, str)
		}
		return out, nil
	}
	return nil, errors.New("is neither a string nor a list")
}
