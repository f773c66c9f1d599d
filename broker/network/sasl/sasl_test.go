package sasl

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// rfc7677Credential is the SCRAM-SHA-256 credential of RFC 7677's example:
// user "user", password "pencil".
func rfc7677Credential(t *testing.T) Credential {
	t.Helper()
	m := scramMechByName(config.MechScramSHA256)
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := m.saltedPassword("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return m.CredentialFromSalted(salt, salted, 4096)
}

func rfc7677Server(t *testing.T) *scramServer {
	cred := rfc7677Credential(t)
	s := newScramServer(scramMechByName(config.MechScramSHA256), func(u string) (Credential, bool) {
		return cred, u == "user"
	})
	s.nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	return s
}

// TestScramRFC7677Vector runs the server through RFC 7677 section 3.
func TestScramRFC7677Vector(t *testing.T) {
	s := rfc7677Server(t)
	out, done, err := s.step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatalf("client-first: %v, done %v", err, done)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(out) != want {
		t.Fatalf("server-first %q, want %q", out, want)
	}
	out, done, err = s.step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatalf("client-final: %v, done %v", err, done)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(out) != want {
		t.Fatalf("server-final %q, want %q", out, want)
	}
	if s.principal() != "user" {
		t.Fatalf("principal %q", s.principal())
	}
}

func TestScramServerRejects(t *testing.T) {
	const first = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	const goodFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	for _, tc := range []struct {
		name, first, final string
		// clientMsg is the message sent to the client as is; empty means
		// the generic "invalid credentials" answer.
		clientMsg string
	}{
		{name: "unknown user", first: "n,,n=mallory,r=abc"},
		{name: "channel binding requested", first: "p=tls-unique,,n=user,r=abc"},
		{name: "no nonce", first: "n,,n=user"},
		{name: "bad name escape", first: "n,,n=us=er,r=abc"},
		{name: "token auth", first: "n,,n=user,r=abc,tokenauth=true"},
		{name: "other authzid", first: "n,a=admin,n=user,r=abc", clientMsg: "Authentication failed: Client requested an authorization id that is different from username"},
		{name: "wrong proof", first: first, final: strings.Replace(goodFinal, "p=dHzb", "p=dHzc", 1)},
		{name: "short proof", first: first, final: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA"},
		{name: "wrong nonce", first: first, final: strings.Replace(goodFinal, "$k0,", "$k1,", 1)},
		{name: "nonce with a prefix", first: first, final: strings.Replace(goodFinal, "r=", "r=x", 1)},
		{name: "no proof", first: first, final: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rfc7677Server(t)
			_, _, err := s.step([]byte(tc.first))
			if err == nil && tc.final != "" {
				_, _, err = s.step([]byte(tc.final))
			}
			if err == nil {
				t.Fatal("accepted")
			}
			var ce *saslClientError
			if got := errors.As(err, &ce); got != (tc.clientMsg != "") || (got && ce.msg != tc.clientMsg) {
				t.Fatalf("error %v (client error %v), want client message %q", err, got, tc.clientMsg)
			}
		})
	}
}

// TestScramServerWithFranzClient runs franz-go's SCRAM client against the
// server for both mechanisms, with a name that needs escaping.
func TestScramServerWithFranzClient(t *testing.T) {
	for _, m := range ScramMechs {
		t.Run(m.Name, func(t *testing.T) {
			cred, err := BootstrapCredential(config.ScramBootstrapUser{Mechanism: m.Name, Name: "a,b=c", Password: "s3cret", Iterations: 4096})
			if err != nil {
				t.Fatal(err)
			}
			for _, pass := range []string{"s3cret", "wrong"} {
				auth := scram.Auth{User: "a,b=c", Pass: pass}
				mech := auth.AsSha256Mechanism()
				if m.Name == config.MechScramSHA512 {
					mech = auth.AsSha512Mechanism()
				}
				sess, msg, err := mech.Authenticate(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				srv := newScramServer(&m, func(u string) (Credential, bool) { return cred, u == "a,b=c" })
				var serverDone bool
				for !serverDone {
					var out []byte
					out, serverDone, err = srv.step(msg)
					if err != nil {
						break
					}
					var clientDone bool
					clientDone, msg, err = sess.Challenge(out)
					if err != nil {
						t.Fatalf("client: %v", err)
					}
					if clientDone != serverDone {
						t.Fatalf("client done %v, server done %v", clientDone, serverDone)
					}
				}
				if (err == nil) != (pass == "s3cret") {
					t.Fatalf("password %q: err %v", pass, err)
				}
			}
		})
	}
}

func TestPlainMessage(t *testing.T) {
	users := map[string]string{"alice": "alice-secret"}
	for _, tc := range []struct {
		msg, user, clientMsg string
		generic              bool
	}{
		{msg: "\x00alice\x00alice-secret", user: "alice"},
		{msg: "alice\x00alice\x00alice-secret", user: "alice"},
		{msg: "\x00alice\x00alice-secret\x00extra", user: "alice"},
		{msg: "\x00alice\x00wrong", clientMsg: "Authentication failed: Invalid username or password"},
		{msg: "\x00bob\x00alice-secret", clientMsg: "Authentication failed: Invalid username or password"},
		{msg: "admin\x00alice\x00alice-secret", clientMsg: "Authentication failed: Client requested an authorization id that is different from username"},
		{msg: "\x00\x00alice-secret", generic: true},
		{msg: "\x00alice\x00", generic: true},
		{msg: "alice", generic: true},
	} {
		user, err := plainAuthenticate([]byte(tc.msg), users)
		var ce *saslClientError
		switch {
		case tc.user != "":
			if err != nil || user != tc.user {
				t.Errorf("%q: user %q, %v", tc.msg, user, err)
			}
		case tc.generic:
			if err == nil || errors.As(err, &ce) {
				t.Errorf("%q: want a generic failure, got %v", tc.msg, err)
			}
		default:
			if !errors.As(err, &ce) || ce.msg != tc.clientMsg {
				t.Errorf("%q: got %v, want %q", tc.msg, err, tc.clientMsg)
			}
		}
	}
}

// authTestFrame encodes a request as the frame body the authenticator reads.
func authTestFrame(req kmsg.Request, corr int32) []byte {
	b := make([]byte, 0, 64)
	b = append(b, byte(req.Key()>>8), byte(req.Key()), byte(req.GetVersion()>>8), byte(req.GetVersion()))
	b = append(b, byte(corr>>24), byte(corr>>16), byte(corr>>8), byte(corr))
	b = append(b, 0, 1, 'c')
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func testAuthenticator(users map[string]string) *Authenticator {
	return &Authenticator{
		mechanisms: []string{config.MechPlain, config.MechScramSHA256},
		newMech: func(string) saslMechServer {
			return &plainServer{users: users}
		},
		apiVersions: func(req protocol.Request) kmsg.Response {
			if req.Body == nil { // an unsupported version, as newAuthenticator answers it
				resp := kmsg.NewPtrApiVersionsResponse()
				resp.ErrorCode = 35
				return resp
			}
			return req.Body.(*kmsg.ApiVersionsRequest).ResponseKind()
		},
	}
}

// TestAuthenticatorSequence drives the authentication state machine frame
// by frame through Kafka's sequences and failure paths.
func TestAuthenticatorSequence(t *testing.T) {
	users := map[string]string{"alice": "alice-secret"}
	handshake := func(mech string, v int16) kmsg.Request {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = v, mech
		return r
	}
	authReq := func(token string) kmsg.Request {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = 2, []byte(token)
		return r
	}
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 12

	t.Run("v1 handshake", func(t *testing.T) {
		a := testAuthenticator(users)
		if out := a.Handle(authTestFrame(apiVersions, 1)); out.Close || out.Resp == nil || out.Corr != 1 {
			t.Fatalf("ApiVersions: %+v", out)
		}
		out := a.Handle(authTestFrame(handshake(config.MechPlain, 1), 2))
		hr, ok := out.Resp.(*kmsg.SASLHandshakeResponse)
		if out.Close || !ok || hr.ErrorCode != 0 || len(hr.SupportedMechanisms) != 2 {
			t.Fatalf("handshake: %+v", out)
		}
		out = a.Handle(authTestFrame(authReq("\x00alice\x00alice-secret"), 3))
		if ar, ok := out.Resp.(*kmsg.SASLAuthenticateResponse); out.Close || !ok || ar.ErrorCode != 0 {
			t.Fatalf("authenticate: %+v", out)
		}
		if a.state != authComplete || a.Principal != "User:alice" {
			t.Fatalf("state %v principal %q", a.state, a.Principal)
		}
	})
	t.Run("v0 raw tokens", func(t *testing.T) {
		a := testAuthenticator(users)
		if out := a.Handle(authTestFrame(handshake(config.MechPlain, 0), 1)); out.Close {
			t.Fatalf("handshake v0: %+v", out)
		}
		out := a.Handle([]byte("\x00alice\x00alice-secret"))
		if out.Close || !out.RawReply || len(out.Token) != 0 || a.state != authComplete {
			t.Fatalf("raw token: %+v", out)
		}
		b := testAuthenticator(users)
		b.Handle(authTestFrame(handshake(config.MechPlain, 0), 1))
		if out := b.Handle([]byte("\x00alice\x00nope")); !out.Close || out.Resp != nil || out.RawReply {
			t.Fatalf("raw bad password must close without an answer: %+v", out)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		a := testAuthenticator(users)
		a.Handle(authTestFrame(handshake(config.MechPlain, 1), 1))
		out := a.Handle(authTestFrame(authReq("\x00alice\x00nope"), 2))
		ar, ok := out.Resp.(*kmsg.SASLAuthenticateResponse)
		if !out.Close || !ok || ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || ar.ErrorMessage == nil ||
			*ar.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("generic failure message", func(t *testing.T) {
		a := testAuthenticator(users)
		a.mechanisms = []string{config.MechScramSHA256}
		a.newMech = func(string) saslMechServer {
			return newScramServer(scramMechByName(config.MechScramSHA256), func(string) (Credential, bool) { return Credential{}, false })
		}
		a.Handle(authTestFrame(handshake(config.MechScramSHA256, 1), 1))
		out := a.Handle(authTestFrame(authReq("n,,n=alice,r=abc"), 2))
		ar, _ := out.Resp.(*kmsg.SASLAuthenticateResponse)
		want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
		if !out.Close || ar == nil || ar.ErrorMessage == nil || *ar.ErrorMessage != want {
			t.Fatalf("%+v", out)
		}
	})
	for _, tc := range []struct {
		name   string
		frames [][]byte
		// answered is whether the closing frame gets an answer.
		answered bool
	}{
		{"metadata first", [][]byte{authTestFrame(metadata, 1)}, false},
		{"not kafka", [][]byte{[]byte("GET / HTTP/1.1\r\n")}, false},
		{"api versions twice", [][]byte{authTestFrame(apiVersions, 1), authTestFrame(apiVersions, 2)}, false},
		{"unsupported mechanism", [][]byte{authTestFrame(handshake("GSSAPI", 1), 1)}, true},
		{"metadata mid-auth", [][]byte{authTestFrame(handshake(config.MechPlain, 1), 1), authTestFrame(metadata, 2)}, false},
		{"second handshake", [][]byte{authTestFrame(handshake(config.MechPlain, 1), 1), authTestFrame(handshake(config.MechPlain, 1), 2)}, true},
		{"authenticate before handshake", [][]byte{authTestFrame(authReq("x"), 1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testAuthenticator(users)
			var out Output
			for i, f := range tc.frames {
				out = a.Handle(f)
				if out.Close != (i == len(tc.frames)-1) {
					t.Fatalf("frame %d: close %v (%s)", i, out.Close, out.Reason)
				}
			}
			if (out.Resp != nil) != tc.answered {
				t.Fatalf("answer %+v, want answered %v", out.Resp, tc.answered)
			}
			if out.Reason == "" {
				t.Fatal("no reason to log")
			}
		})
	}
}

// TestScramOldLibrdkafkaNonce accepts the client-final nonce librdkafka
// before 2.6.1 sends (its client nonce, then the full nonce) and checks the
// proof over the message as sent.
func TestScramOldLibrdkafkaNonce(t *testing.T) {
	cred, err := BootstrapCredential(config.ScramBootstrapUser{Mechanism: config.MechScramSHA256, Name: "u", Password: "p", Iterations: 4096})
	if err != nil {
		t.Fatal(err)
	}
	m := scramMechByName(config.MechScramSHA256)
	s := newScramServer(m, func(string) (Credential, bool) { return cred, true })
	const cnonce = "abc"
	serverFirst, _, err := s.step([]byte("n,,n=u,r=" + cnonce))
	if err != nil {
		t.Fatal(err)
	}
	full := strings.TrimPrefix(strings.Split(string(serverFirst), ",")[0], "r=")
	withoutProof := "c=biws,r=" + cnonce + full
	salted, _ := m.saltedPassword("p", cred.Salt, 4096)
	clientKey := m.hmac(salted, "Client Key")
	sig := m.hmac(m.sum(clientKey), "n=u,r="+cnonce+","+string(serverFirst)+","+withoutProof)
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	if _, done, err := s.step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey))); err != nil || !done {
		t.Fatalf("old librdkafka final message: %v", err)
	}
}
