package broker

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// rfc7677Credential is the SCRAM-SHA-256 credential of RFC 7677's example:
// user "user", password "pencil".
func rfc7677Credential(t *testing.T) controller.ScramCredential {
	t.Helper()
	m := scramMechByName(mechScramSHA256)
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := m.saltedPassword("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return m.credentialFromSalted(salt, salted, 4096)
}

func rfc7677Server(t *testing.T) *scramServer {
	cred := rfc7677Credential(t)
	s := newScramServer(scramMechByName(mechScramSHA256), func(u string) (controller.ScramCredential, bool) {
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
	for _, m := range scramMechs {
		t.Run(m.name, func(t *testing.T) {
			cred, err := bootstrapCredential(ScramBootstrapUser{Mechanism: m.name, Name: "a,b=c", Password: "s3cret", Iterations: 4096})
			if err != nil {
				t.Fatal(err)
			}
			for _, pass := range []string{"s3cret", "wrong"} {
				auth := scram.Auth{User: "a,b=c", Pass: pass}
				mech := auth.AsSha256Mechanism()
				if m.name == mechScramSHA512 {
					mech = auth.AsSha512Mechanism()
				}
				sess, msg, err := mech.Authenticate(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				srv := newScramServer(&m, func(u string) (controller.ScramCredential, bool) { return cred, u == "a,b=c" })
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

func TestParseJAAS(t *testing.T) {
	m, err := parseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret"
		user_admin="admin-secret" user_alice="a \"quoted\" s;cret" user_bob=bare;`)
	if err != nil {
		t.Fatal(err)
	}
	if m.Class != plainLoginModule || m.Flag != "required" {
		t.Fatalf("module %+v", m)
	}
	users := m.plainUsers()
	want := map[string]string{"admin": "admin-secret", "alice": `a "quoted" s;cret`, "bob": "bare"}
	if len(users) != len(want) {
		t.Fatalf("users %v", users)
	}
	for u, p := range want {
		if users[u] != p {
			t.Errorf("user %s: %q, want %q", u, users[u], p)
		}
	}
	for _, bad := range []string{
		``,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x"`,
		`org.apache.kafka.common.security.plain.PlainLoginModule mandatory user_a="x";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x;`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a=;`,
		`A required; B required;`,
	} {
		if _, err := parseJAAS(bad); err == nil {
			t.Errorf("parseJAAS(%q) accepted", bad)
		}
	}
}

func TestParseScramBootstrap(t *testing.T) {
	salt := base64.StdEncoding.EncodeToString([]byte("0123456789"))
	got, err := parseScramBootstrap(`SCRAM-SHA-256=[name=alice,password=alice-secret], SCRAM-SHA-512=[name="bob",password="b,",iterations=8192];` +
		`SCRAM-SHA-256=[name=carol,salt=` + salt + `,saltedpassword=` + salt + `]`)
	if err == nil {
		t.Fatalf("a comma inside a password is a separator, as in kafka-storage; got %+v", got)
	}
	got, err = parseScramBootstrap(`SCRAM-SHA-256=[name=alice,password=alice-secret], SCRAM-SHA-512=[name="bob",password="b=1",iterations=8192];` +
		`SCRAM-SHA-256=[name=carol,salt=` + salt + `,saltedpassword=` + salt + `]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "alice" || got[0].Password != "alice-secret" || got[0].Iterations != 4096 ||
		got[1].Mechanism != mechScramSHA512 || got[1].Name != "bob" || got[1].Password != "b=1" || got[1].Iterations != 8192 ||
		string(got[2].Salt) != "0123456789" || string(got[2].SaltedPassword) != "0123456789" {
		t.Fatalf("parsed %+v", got)
	}
	for _, bad := range []string{
		`SCRAM-SHA-1=[name=a,password=b]`,
		`SCRAM-SHA-256=[password=b]`,
		`SCRAM-SHA-256=[name=a]`,
		`SCRAM-SHA-256=[name=a,password=b,iterations=100]`,
		`SCRAM-SHA-256=[name=a,password=b,iterations=20000]`,
		`SCRAM-SHA-256=[name=a,saltedpassword=` + salt + `]`,
		`SCRAM-SHA-256=[name=a,password=b,colour=blue]`,
		`SCRAM-SHA-256=[name=a,password=b`,
		`SCRAM-SHA-256=name=a,password=b`,
	} {
		if _, err := parseScramBootstrap(bad); err == nil {
			t.Errorf("parseScramBootstrap(%q) accepted", bad)
		}
	}
}

func TestSecurityConfig(t *testing.T) {
	cfg, unknown, err := ParseConfig(map[string]string{
		"listeners":                                           "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093,client://:9094",
		"advertised.listeners":                                "SASL_PLAINTEXT://kafka.example:19093",
		"listener.security.protocol.map":                      "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CLIENT:SASL_PLAINTEXT",
		"inter.broker.listener.name":                          "PLAINTEXT",
		"sasl.jaas.config":                                    `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`,
		"listener.name.client.plain.sasl.jaas.config":         `org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="b";`,
		"listener.name.client.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.client.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"sasl.scram.bootstrap.users":                          "SCRAM-SHA-256=[name=alice,password=alice-secret]",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 0 {
		t.Fatalf("unknown %v", unknown)
	}
	want := []Listener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Name: "SASL_PLAINTEXT", Host: "127.0.0.1", Port: 9093, SecurityProtocol: "SASL_PLAINTEXT"},
		{Name: "CLIENT", Host: "", Port: 9094, SecurityProtocol: "SASL_PLAINTEXT"},
	}
	for i, l := range want {
		if cfg.Listeners[i] != l {
			t.Errorf("listener %d: %+v, want %+v", i, cfg.Listeners[i], l)
		}
	}
	if a := cfg.AdvertisedListeners; len(a) != 1 || a[0].Host != "kafka.example" || a[0].SecurityProtocol != "SASL_PLAINTEXT" {
		t.Errorf("advertised %+v", a)
	}
	if cfg.SASL.PlainUsers["SASL_PLAINTEXT"]["alice"] != "a" || cfg.SASL.PlainUsers["CLIENT"]["bob"] != "b" || cfg.SASL.PlainUsers["CLIENT"]["alice"] != "" {
		t.Errorf("plain users %v", cfg.SASL.PlainUsers)
	}
	if m := cfg.SASL.mechanismsFor("CLIENT"); len(m) != 1 || m[0] != mechScramSHA512 {
		t.Errorf("CLIENT mechanisms %v", m)
	}
	if m := cfg.SASL.mechanismsFor("SASL_PLAINTEXT"); strings.Join(m, ",") != defaultSASLMechanisms {
		t.Errorf("default mechanisms %v", m)
	}
	if len(cfg.SASL.BootstrapScram) != 1 {
		t.Errorf("bootstrap %+v", cfg.SASL.BootstrapScram)
	}
	for _, v := range cfg.Props {
		if strings.Contains(v, "alice-secret") || strings.Contains(v, `user_alice`) {
			t.Errorf("a secret is in Props (DescribeConfigs): %q", v)
		}
	}

	for _, tc := range []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{"listeners": "SSL://127.0.0.1:9093"}, "listeners"},
		{map[string]string{"listeners": "SASL_SSL://127.0.0.1:9093"}, "listeners"},
		{map[string]string{"listeners": "CLIENT://127.0.0.1:9093"}, "listener.security.protocol.map"},
		{map[string]string{"listener.security.protocol.map": "PLAINTEXT:TLS"}, "listener.security.protocol.map"},
		{map[string]string{"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER"}, "sasl.enabled.mechanisms"},
		{map[string]string{"advertised.listeners": "OTHER://h:1"}, "advertised.listeners"},
		{map[string]string{"inter.broker.listener.name": "OTHER"}, "inter.broker.listener.name"},
		{map[string]string{"listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}, "listeners"},
		{map[string]string{"sasl.jaas.config": "nonsense"}, "sasl.jaas.config"},
		{map[string]string{"sasl.scram.bootstrap.users": "SCRAM-SHA-256=[name=a]"}, "sasl.scram.bootstrap.users"},
		{map[string]string{"listener.name.plaintext.plain.sasl.jaas.config": `x.Other required;`}, "listener.name.plaintext.plain.sasl.jaas.config"},
	} {
		_, _, err := ParseConfig(tc.props)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%v: error %v does not name %s", tc.props, err, tc.key)
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

func testAuthenticator(users map[string]string) *authenticator {
	return &authenticator{
		mechanisms: []string{mechPlain, mechScramSHA256},
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
		if out := a.handle(authTestFrame(apiVersions, 1)); out.close || out.resp == nil || out.corr != 1 {
			t.Fatalf("ApiVersions: %+v", out)
		}
		out := a.handle(authTestFrame(handshake(mechPlain, 1), 2))
		hr, ok := out.resp.(*kmsg.SASLHandshakeResponse)
		if out.close || !ok || hr.ErrorCode != 0 || len(hr.SupportedMechanisms) != 2 {
			t.Fatalf("handshake: %+v", out)
		}
		out = a.handle(authTestFrame(authReq("\x00alice\x00alice-secret"), 3))
		if ar, ok := out.resp.(*kmsg.SASLAuthenticateResponse); out.close || !ok || ar.ErrorCode != 0 {
			t.Fatalf("authenticate: %+v", out)
		}
		if a.state != authComplete || a.principal != "User:alice" {
			t.Fatalf("state %v principal %q", a.state, a.principal)
		}
	})
	t.Run("v0 raw tokens", func(t *testing.T) {
		a := testAuthenticator(users)
		if out := a.handle(authTestFrame(handshake(mechPlain, 0), 1)); out.close {
			t.Fatalf("handshake v0: %+v", out)
		}
		out := a.handle([]byte("\x00alice\x00alice-secret"))
		if out.close || !out.rawReply || len(out.token) != 0 || a.state != authComplete {
			t.Fatalf("raw token: %+v", out)
		}
		b := testAuthenticator(users)
		b.handle(authTestFrame(handshake(mechPlain, 0), 1))
		if out := b.handle([]byte("\x00alice\x00nope")); !out.close || out.resp != nil || out.rawReply {
			t.Fatalf("raw bad password must close without an answer: %+v", out)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		a := testAuthenticator(users)
		a.handle(authTestFrame(handshake(mechPlain, 1), 1))
		out := a.handle(authTestFrame(authReq("\x00alice\x00nope"), 2))
		ar, ok := out.resp.(*kmsg.SASLAuthenticateResponse)
		if !out.close || !ok || ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || ar.ErrorMessage == nil ||
			*ar.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("generic failure message", func(t *testing.T) {
		a := testAuthenticator(users)
		a.mechanisms = []string{mechScramSHA256}
		a.newMech = func(string) saslMechServer {
			return newScramServer(scramMechByName(mechScramSHA256), func(string) (controller.ScramCredential, bool) { return controller.ScramCredential{}, false })
		}
		a.handle(authTestFrame(handshake(mechScramSHA256, 1), 1))
		out := a.handle(authTestFrame(authReq("n,,n=alice,r=abc"), 2))
		ar, _ := out.resp.(*kmsg.SASLAuthenticateResponse)
		want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
		if !out.close || ar == nil || ar.ErrorMessage == nil || *ar.ErrorMessage != want {
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
		{"metadata mid-auth", [][]byte{authTestFrame(handshake(mechPlain, 1), 1), authTestFrame(metadata, 2)}, false},
		{"second handshake", [][]byte{authTestFrame(handshake(mechPlain, 1), 1), authTestFrame(handshake(mechPlain, 1), 2)}, true},
		{"authenticate before handshake", [][]byte{authTestFrame(authReq("x"), 1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testAuthenticator(users)
			var out authOutput
			for i, f := range tc.frames {
				out = a.handle(f)
				if out.close != (i == len(tc.frames)-1) {
					t.Fatalf("frame %d: close %v (%s)", i, out.close, out.reason)
				}
			}
			if (out.resp != nil) != tc.answered {
				t.Fatalf("answer %+v, want answered %v", out.resp, tc.answered)
			}
			if out.reason == "" {
				t.Fatal("no reason to log")
			}
		})
	}
}

// TestScramOldLibrdkafkaNonce accepts the client-final nonce librdkafka
// before 2.6.1 sends (its client nonce, then the full nonce) and checks the
// proof over the message as sent.
func TestScramOldLibrdkafkaNonce(t *testing.T) {
	cred, err := bootstrapCredential(ScramBootstrapUser{Mechanism: mechScramSHA256, Name: "u", Password: "p", Iterations: 4096})
	if err != nil {
		t.Fatal(err)
	}
	m := scramMechByName(mechScramSHA256)
	s := newScramServer(m, func(string) (controller.ScramCredential, bool) { return cred, true })
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
