package sasl

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// UnsecuredConfig is the options of Kafka's
// OAuthBearerUnsecuredValidatorCallbackHandler, from the listener's
// OAuthBearerLoginModule JAAS options.
type UnsecuredConfig struct {
	// PrincipalClaim is unsecuredValidatorPrincipalClaimName (default sub).
	PrincipalClaim string
	// ScopeClaim is unsecuredValidatorScopeClaimName (default scope).
	ScopeClaim string
	// RequiredScope is unsecuredValidatorRequiredScope (space-separated).
	RequiredScope []string
	// AllowableClockSkew is unsecuredValidatorAllowableClockSkewMs (default 0).
	AllowableClockSkew time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// UnsecuredValidator validates unsecured JWS tokens ({"alg":"none"}, no
// signature) as Kafka's development validator does: the principal claim
// must be a non-empty string, exp must be present and not passed, iat (if
// present) not in the future and before exp, each within the clock skew,
// and every required scope must be in the token's scope. It proves
// nothing about who the client is: for development only, as in Kafka.
type UnsecuredValidator struct{ cfg UnsecuredConfig }

// NewUnsecuredValidator returns the validator with cfg's defaults filled in.
func NewUnsecuredValidator(cfg UnsecuredConfig) *UnsecuredValidator {
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = "sub"
	}
	if cfg.ScopeClaim == "" {
		cfg.ScopeClaim = "scope"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &UnsecuredValidator{cfg: cfg}
}

func invalidToken(format string, args ...any) *OAuthError {
	return &OAuthError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// decodeJWSPart decodes one Base64URL part of a compact JWS into a JSON object.
func decodeJWSPart(part, what string) (map[string]any, *OAuthError) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return nil, invalidToken("JWS %s is not Base64URL: %v", what, err)
	}
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, invalidToken("JWS %s is not a JSON object", what)
	}
	return m, nil
}

// ValidateToken implements OAuthValidator.
func (v *UnsecuredValidator) ValidateToken(token string) (OAuthToken, *OAuthError) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] != "" {
		return OAuthToken{}, invalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values and the third must be empty")
	}
	header, err := decodeJWSPart(parts[0], "header")
	if err != nil {
		return OAuthToken{}, err
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return OAuthToken{}, invalidToken("Unsecured JWS must have \"alg\":\"none\", not %v", header["alg"])
	}
	claims, err := decodeJWSPart(parts[1], "claims")
	if err != nil {
		return OAuthToken{}, err
	}
	principal, _ := claims[v.cfg.PrincipalClaim].(string)
	if strings.TrimSpace(principal) == "" {
		return OAuthToken{}, invalidToken("No principal name in JWT claim: %s", v.cfg.PrincipalClaim)
	}
	now := v.cfg.Now()
	nowMs := float64(now.UnixMilli())
	skewMs := float64(v.cfg.AllowableClockSkew.Milliseconds())
	exp, ok, err := numClaim(claims, "exp")
	if err != nil {
		return OAuthToken{}, err
	}
	if !ok {
		return OAuthToken{}, invalidToken("No expiration time in JWT")
	}
	if nowMs > 1000*exp+skewMs {
		return OAuthToken{}, invalidToken("The indicated time (%d ms) is later than the time at which the JWT expires (%f ms) allowing for %d ms of clock skew",
			now.UnixMilli(), 1000*exp, v.cfg.AllowableClockSkew.Milliseconds())
	}
	iat, ok, err := numClaim(claims, "iat")
	if err != nil {
		return OAuthToken{}, err
	}
	if ok {
		if nowMs < 1000*iat-skewMs {
			return OAuthToken{}, invalidToken("The indicated time (%d ms) is before the time at which the JWT was issued (%f ms) allowing for %d ms of clock skew",
				now.UnixMilli(), 1000*iat, v.cfg.AllowableClockSkew.Milliseconds())
		}
		if exp <= iat {
			return OAuthToken{}, invalidToken("The Expiration Time time (%f seconds) is not after the Issued At time (%f seconds)", exp, iat)
		}
	}
	scope, err := scopeClaim(claims, v.cfg.ScopeClaim)
	if err != nil {
		return OAuthToken{}, err
	}
	for _, req := range v.cfg.RequiredScope {
		if !slices.Contains(scope, req) {
			e := invalidToken("The provided scope (%s) was missing a required scope (%s). All required scope elements: %s",
				strings.Join(scope, " "), req, strings.Join(v.cfg.RequiredScope, " "))
			e.Scope = strings.Join(v.cfg.RequiredScope, " ")
			return OAuthToken{}, e
		}
	}
	sec, frac := math.Modf(exp)
	return OAuthToken{Principal: principal, Scope: scope, Expires: time.Unix(int64(sec), int64(frac*1e9))}, nil
}

// numClaim reads a NumericDate claim.
func numClaim(claims map[string]any, name string) (float64, bool, *OAuthError) {
	raw, ok := claims[name]
	if !ok {
		return 0, false, nil
	}
	n, isNum := raw.(json.Number)
	if !isNum {
		return 0, false, invalidToken("JWT claim %s is not a number", name)
	}
	f, err := n.Float64()
	if err != nil {
		return 0, false, invalidToken("JWT claim %s is not a number", name)
	}
	return f, true, nil
}

// scopeClaim reads the scope: a space-separated string or a list of strings.
func scopeClaim(claims map[string]any, name string) ([]string, *OAuthError) {
	switch s := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(s), nil
	case []any:
		out := make([]string, 0, len(s))
		for _, e := range s {
			str, ok := e.(string)
			if !ok {
				return nil, invalidToken("JWT claim %s holds a non-string", name)
			}
			out = append(out, str)
		}
		return out, nil
	}
	return nil, invalidToken("JWT claim %s is neither a string nor a list", name)
}
