package sasl

// SASL/OAUTHBEARER (RFC 7628, KIP-255) as Kafka's OAuthBearerSaslServer
// runs it: the client's first message carries the bearer token (and
// optional authorization id and extensions); a validator checks it. A token
// that fails validation is answered, not refused: the server's challenge is
// RFC 7628's error JSON ({"status":"invalid_token"} and, when a required
// scope is missing, the scope), the client replies with a single %x01, and
// only then does the exchange fail, with SASL_AUTHENTICATION_FAILED and the
// JSON as the message. The validator (an unsecured JWS one for development,
// or a JWKS one) is the listener's server callback handler.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// MechOAuthBearer is the mechanism's name.
const MechOAuthBearer = "OAUTHBEARER"

// OAuthToken is what a validator learned from a valid token.
type OAuthToken struct {
	// Principal is the principal's name (the sub claim, or the configured one).
	Principal string
	// Scope is the token's scope.
	Scope []string
	// Expires is when the token stops being valid (zero: unknown).
	Expires time.Time
}

// OAuthError is a token that failed validation: Status, Scope and
// OpenIDConfiguration go to the client in the error JSON, Reason only to
// the broker's log.
type OAuthError struct {
	Status              string
	Scope               string
	OpenIDConfiguration string
	Reason              string
}

func (e *OAuthError) Error() string { return e.Reason }

// json is RFC 7628's error response, as Kafka's jsonErrorResponse builds it.
func (e *OAuthError) json() string {
	s := fmt.Sprintf(`{"status":"%s"`, e.Status)
	if e.Scope != "" {
		s += fmt.Sprintf(`, "scope":"%s"`, e.Scope)
	}
	if e.OpenIDConfiguration != "" {
		s += fmt.Sprintf(`, "openid-configuration":"%s"`, e.OpenIDConfiguration)
	}
	return s + "}"
}

// OAuthValidator validates bearer tokens: Kafka's server callback handler
// of OAUTHBEARER. Safe for concurrent use.
type OAuthValidator interface {
	ValidateToken(token string) (OAuthToken, *OAuthError)
}

// The grammar of the client's first message (RFC 7628 §3.1, Kafka's
// OAuthBearerClientInitialResponse).
var (
	oauthInitial = regexp.MustCompile(`^n,(?:a=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$`)
	oauthAuth    = regexp.MustCompile(`^(\w+) +([-_.a-zA-Z0-9]+)$`)
)

// oauthInitialResponse is a parsed client first message.
type oauthInitialResponse struct {
	authzid    string
	token      string
	extensions map[string]string
}

func parseOAuthInitial(b []byte) (oauthInitialResponse, error) {
	m := oauthInitial.FindSubmatch(b)
	if m == nil {
		return oauthInitialResponse{}, errors.New("Invalid OAUTHBEARER client first message")
	}
	r := oauthInitialResponse{authzid: strings.NewReplacer("=2C", ",", "=3D", "=").Replace(string(m[1])), extensions: map[string]string{}}
	auth := ""
	for _, kv := range strings.Split(strings.TrimSuffix(string(m[2]), "\x01"), "\x01") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if k == "auth" {
			auth = v
			continue
		}
		r.extensions[k] = v
	}
	if auth == "" {
		return oauthInitialResponse{}, errors.New("Invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	am := oauthAuth.FindStringSubmatch(auth)
	if am == nil {
		return oauthInitialResponse{}, errors.New("Invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(am[1], "Bearer") {
		return oauthInitialResponse{}, fmt.Errorf("Invalid scheme in OAUTHBEARER client first message: %s", am[1])
	}
	r.token = am[2]
	return r, nil
}

// oauthServer is the server side of one OAUTHBEARER exchange.
type oauthServer struct {
	v OAuthValidator
	// errJSON is the error challenge sent, awaiting the client's %x01;
	// reason is why, for the log.
	errJSON, reason string
	token           OAuthToken
}

func (o *oauthServer) step(in []byte) ([]byte, bool, error) {
	if len(in) == 1 && in[0] == 0x01 && o.errJSON != "" {
		return nil, false, fmt.Errorf("%s: %w", o.reason, &saslClientError{msg: o.errJSON})
	}
	o.errJSON, o.reason = "", ""
	r, err := parseOAuthInitial(in)
	if err != nil {
		return nil, false, err
	}
	if o.v == nil {
		return nil, false, errors.New("no OAUTHBEARER validator configured on this listener")
	}
	tok, verr := o.v.ValidateToken(r.token)
	if verr != nil {
		o.errJSON, o.reason = verr.json(), verr.Reason
		return []byte(o.errJSON), false, nil
	}
	if r.authzid != "" && r.authzid != tok.Principal {
		return nil, false, &saslClientError{msg: fmt.Sprintf(
			"Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			r.authzid, tok.Principal)}
	}
	o.token = tok
	return []byte{}, true, nil
}

func (o *oauthServer) principal() string { return o.token.Principal }

// lifetime is when the session's token expires (KIP-368).
func (o *oauthServer) lifetime() time.Time { return o.token.Expires }
