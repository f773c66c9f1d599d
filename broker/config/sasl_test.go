package config

import (
	"encoding/base64"
	"strings"
	"testing"
)

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
		got[1].Mechanism != MechScramSHA512 || got[1].Name != "bob" || got[1].Password != "b=1" || got[1].Iterations != 8192 ||
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
	if m := cfg.SASL.MechanismsFor("CLIENT"); len(m) != 1 || m[0] != MechScramSHA512 {
		t.Errorf("CLIENT mechanisms %v", m)
	}
	if m := cfg.SASL.MechanismsFor("SASL_PLAINTEXT"); strings.Join(m, ",") != defaultSASLMechanisms {
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
		// A TLS listener needs a PEM keystore (tls_test.go).
		{map[string]string{"listeners": "SSL://127.0.0.1:9093"}, "ssl.keystore.type"},
		{map[string]string{"listeners": "SASL_SSL://127.0.0.1:9093"}, "ssl.keystore.type"},
		{map[string]string{"listeners": "CLIENT://127.0.0.1:9093"}, "listener.security.protocol.map"},
		{map[string]string{"listener.security.protocol.map": "PLAINTEXT:TLS"}, "listener.security.protocol.map"},
		{map[string]string{"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN,MAGIC"}, "sasl.enabled.mechanisms"},
		{map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "OAUTHBEARER",
			"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "com.example.Custom"}, "callback.handler.class"},
		{map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "OAUTHBEARER",
			"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"}, "sasl.oauthbearer.jwks.endpoint.url"},
		{map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "OAUTHBEARER",
			"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorAllowableClockSkewMs="soon";`}, "unsecuredValidatorAllowableClockSkewMs"},
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

func TestOAuthConfig(t *testing.T) {
	cfg, unknown, err := ParseConfig(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093,OAUTH://127.0.0.1:9094",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,OAUTH:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-256,OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`unsecuredValidatorRequiredScope="kafka write" unsecuredValidatorAllowableClockSkewMs="500" unsecuredValidatorPrincipalClaimName="user";`,
		"listener.name.oauth.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url":                                 "https://idp.example/jwks",
		"sasl.oauthbearer.expected.audience":                                 "kafka,other",
		"sasl.oauthbearer.clock.skew.seconds":                                "5",
		"connection.failed.authentication.delay.ms":                          "250",
		"connections.max.reauth.ms":                                          "60000",
	})
	if err != nil || len(unknown) != 0 {
		t.Fatalf("%v unknown %v", err, unknown)
	}
	o := cfg.SASL.OAuth
	sp := o.Listeners["SASL_PLAINTEXT"]
	if sp.JWKS || sp.PrincipalClaim != "user" || strings.Join(sp.RequiredScope, ",") != "kafka,write" || sp.AllowableClockSkewMs != 500 {
		t.Errorf("SASL_PLAINTEXT: %+v", sp)
	}
	if !o.Listeners["OAUTH"].JWKS || o.JWKS.URL != "https://idp.example/jwks" || strings.Join(o.JWKS.ExpectedAudience, ",") != "kafka,other" ||
		o.JWKS.ClockSkewSeconds != 5 || o.JWKS.SubClaim != "sub" || o.JWKS.RefreshMs != 3600000 {
		t.Errorf("OAUTH: %+v %+v", o.Listeners["OAUTH"], o.JWKS)
	}
	if _, ok := o.Listeners["PLAINTEXT"]; ok {
		t.Error("PLAINTEXT listener got an OAuth validator")
	}
	if cfg.SASL.FailedAuthenticationDelayMs != 250 || cfg.SASL.ConnectionsMaxReauthMs != 60000 {
		t.Errorf("timing: %+v", cfg.SASL)
	}
	def, _, _ := ParseConfig(map[string]string{})
	if def.SASL.FailedAuthenticationDelayMs != 100 || def.SASL.ConnectionsMaxReauthMs != 0 {
		t.Errorf("defaults: %d %d", def.SASL.FailedAuthenticationDelayMs, def.SASL.ConnectionsMaxReauthMs)
	}
}
