package sasl

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

func unsecuredToken(header, claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(claims)) + "."
}

func TestUnsecuredValidator(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	const none = `{"alg":"none"}`
	for _, c := range []struct {
		name   string
		cfg    UnsecuredConfig
		token  string
		want   string // principal, or "" for a failure
		reason string // part of the failure's reason
		scope  string
	}{
		{name: "valid", token: unsecuredToken(none, `{"sub":"alice","exp":1700000060,"iat":1699999990}`), want: "alice"},
		{name: "other principal claim", cfg: UnsecuredConfig{PrincipalClaim: "user"}, token: unsecuredToken(none, `{"user":"bob","exp":1700000060}`), want: "bob"},
		{name: "expired", token: unsecuredToken(none, `{"sub":"alice","exp":1699999990}`), reason: "later than the time at which the JWT expires"},
		{name: "expired within skew", cfg: UnsecuredConfig{AllowableClockSkew: 20 * time.Second}, token: unsecuredToken(none, `{"sub":"alice","exp":1699999990}`), want: "alice"},
		{name: "no exp", token: unsecuredToken(none, `{"sub":"alice"}`), reason: "No expiration time in JWT"},
		{name: "issued in the future", token: unsecuredToken(none, `{"sub":"alice","exp":1700000600,"iat":1700000060}`), reason: "before the time at which the JWT was issued"},
		{name: "exp before iat", cfg: UnsecuredConfig{AllowableClockSkew: time.Hour}, token: unsecuredToken(none, `{"sub":"alice","exp":1700000000,"iat":1700000060}`), reason: "is not after the Issued At time"},
		{name: "no principal", token: unsecuredToken(none, `{"exp":1700000060}`), reason: "No principal name in JWT claim: sub"},
		{name: "signed", token: unsecuredToken(`{"alg":"HS256"}`, `{"sub":"alice","exp":1700000060}`), reason: `"alg":"none"`},
		{name: "signature present", token: unsecuredToken(none, `{"sub":"a","exp":1700000060}`) + "c2ln", reason: "third must be empty"},
		{name: "not json", token: base64.RawURLEncoding.EncodeToString([]byte(none)) + ".bm90IGpzb24.", reason: "not a JSON object"},
		{name: "scope present", cfg: UnsecuredConfig{RequiredScope: []string{"kafka", "write"}}, token: unsecuredToken(none, `{"sub":"a","exp":1700000060,"scope":"read kafka write"}`), want: "a"},
		{name: "scope as list", cfg: UnsecuredConfig{RequiredScope: []string{"kafka"}}, token: unsecuredToken(none, `{"sub":"a","exp":1700000060,"scope":["kafka"]}`), want: "a"},
		{name: "scope missing", cfg: UnsecuredConfig{RequiredScope: []string{"kafka", "write"}}, token: unsecuredToken(none, `{"sub":"a","exp":1700000060,"scope":"kafka"}`), reason: "missing a required scope (write)", scope: "kafka write"},
	} {
		c.cfg.Now = clock
		tok, err := NewUnsecuredValidator(c.cfg).ValidateToken(c.token)
		switch {
		case c.want != "" && (err != nil || tok.Principal != c.want):
			t.Errorf("%s: %+v %v, want principal %s", c.name, tok, err, c.want)
		case c.want == "" && (err == nil || !strings.Contains(err.Reason, c.reason) || err.Status != "invalid_token" || err.Scope != c.scope):
			t.Errorf("%s: %+v %+v, want invalid_token with %q (scope %q)", c.name, tok, err, c.reason, c.scope)
		}
	}
}

func TestOAuthInitialResponse(t *testing.T) {
	for _, c := range []struct {
		in            string
		token, authz  string
		ext           map[string]string
		wantErrSubstr string
	}{
		{in: "n,,\x01auth=Bearer abc.def.\x01\x01", token: "abc.def."},
		{in: "n,a=alice,\x01auth=bearer t\x01traceId=42\x01\x01", token: "t", authz: "alice", ext: map[string]string{"traceId": "42"}},
		{in: "n,a=a=2Cb,\x01auth=Bearer t\x01\x01", token: "t", authz: "a,b"},
		{in: "n,,\x01auth=Basic t\x01\x01", wantErrSubstr: "Invalid scheme"},
		{in: "n,,\x01traceId=1\x01\x01", wantErrSubstr: "'auth' not specified"},
		{in: "y,,\x01auth=Bearer t\x01\x01", wantErrSubstr: "Invalid OAUTHBEARER client first message"},
		{in: "n,,\x01auth=Bearer t\x01", wantErrSubstr: "Invalid OAUTHBEARER client first message"},
		{in: "n,,\x01auth=Bearer t!x\x01\x01", wantErrSubstr: "invalid 'auth' format"},
	} {
		r, err := parseOAuthInitial([]byte(c.in))
		if c.wantErrSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErrSubstr) {
				t.Errorf("%q: %+v %v, want error %q", c.in, r, err, c.wantErrSubstr)
			}
			continue
		}
		if err != nil || r.token != c.token || r.authzid != c.authz || fmt.Sprint(r.extensions) != fmt.Sprint(orEmpty(c.ext)) {
			t.Errorf("%q: %+v %v", c.in, r, err)
		}
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// TestOAuthWithFranzClient runs franz-go's OAUTHBEARER client against the
// server step by step: a valid token authenticates; an expired one gets
// the error JSON as a challenge, the client answers %x01, and the exchange
// fails with the JSON as the client's message, as Kafka does.
func TestOAuthWithFranzClient(t *testing.T) {
	v := NewUnsecuredValidator(UnsecuredConfig{})
	run := func(tok, zid string) (string, error) {
		mech := oauth.Auth{Token: tok, Zid: zid}.AsMechanism()
		sess, msg, err := mech.Authenticate(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		s := &oauthServer{v: v}
		for i := 0; i < 3; i++ {
			out, done, err := s.step(msg)
			if err != nil {
				return "", err
			}
			cdone, next, cerr := sess.Challenge(out)
			if cerr != nil {
				t.Fatalf("client: %v", cerr)
			}
			if done {
				if !cdone {
					t.Fatal("server done, client not")
				}
				return s.principal(), nil
			}
			msg = next
		}
		t.Fatal("no end")
		return "", nil
	}
	exp := time.Now().Add(time.Hour).Unix()
	if p, err := run(unsecuredToken(`{"alg":"none"}`, fmt.Sprintf(`{"sub":"admin","exp":%d}`, exp)), ""); err != nil || p != "admin" {
		t.Fatalf("valid token: %q %v", p, err)
	}
	_, err := run(unsecuredToken(`{"alg":"none"}`, fmt.Sprintf(`{"sub":"admin","exp":%d}`, time.Now().Add(-time.Minute).Unix())), "")
	var ce *saslClientError
	if !errors.As(err, &ce) || ce.msg != `{"status":"invalid_token"}` {
		t.Fatalf("expired token: %v", err)
	}
	_, err = run(unsecuredToken(`{"alg":"none"}`, fmt.Sprintf(`{"sub":"admin","exp":%d}`, exp)), "root")
	if !errors.As(err, &ce) || !strings.Contains(ce.msg, "authorization id (root)") {
		t.Fatalf("other authzid: %v", err)
	}
}

// TestOAuthAuthenticatorSequence runs OAUTHBEARER through the
// authenticator: handshake, a rejected token's challenge, %x01, and
// SASL_AUTHENTICATION_FAILED with the error JSON.
func TestOAuthAuthenticatorSequence(t *testing.T) {
	a := NewAuthenticator([]string{MechOAuthBearer}, nil, nil, func(req protocol.Request) kmsg.Response { return nil })
	a.SetOAuth(NewUnsecuredValidator(UnsecuredConfig{RequiredScope: []string{"kafka"}}))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, MechOAuthBearer
	if out := a.Handle(authTestFrame(hs, 1)); out.Close {
		t.Fatalf("handshake: %+v", out)
	}
	auth := func(b string) Output {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = 2, []byte(b)
		return a.Handle(authTestFrame(r, 2))
	}
	tok := unsecuredToken(`{"alg":"none"}`, fmt.Sprintf(`{"sub":"admin","exp":%d}`, time.Now().Add(time.Hour).Unix()))
	out := auth("n,,\x01auth=Bearer " + tok + "\x01\x01")
	ar := out.Resp.(*kmsg.SASLAuthenticateResponse)
	if out.Close || ar.ErrorCode != 0 || string(ar.SASLAuthBytes) != `{"status":"invalid_token", "scope":"kafka"}` {
		t.Fatalf("challenge: %+v %q", out, ar.SASLAuthBytes)
	}
	out = auth("\x01")
	ar = out.Resp.(*kmsg.SASLAuthenticateResponse)
	if !out.Close || ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || *ar.ErrorMessage != `{"status":"invalid_token", "scope":"kafka"}` {
		t.Fatalf("after %%x01: %+v", out)
	}
	if !strings.Contains(out.Reason, "missing a required scope") {
		t.Fatalf("log reason %q lacks the validator's reason", out.Reason)
	}
}
