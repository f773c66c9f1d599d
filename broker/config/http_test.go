package config

import (
	"strings"
	"testing"
)

// TestConsoleSASLConfig: the console's password is read but kept out of
// Props (what DescribeConfigs shows) and is not an unknown key; a
// mechanism needs a user and is one of the broker's.
func TestConsoleSASLConfig(t *testing.T) {
	cfg, unknown, err := ParseConfig(map[string]string{
		"listeners":                   "SASL_PLAINTEXT://127.0.0.1:0",
		"http.console.sasl.mechanism": "SCRAM-SHA-256",
		"http.console.sasl.username":  "console",
		KeyConsoleSASLPassword:        "s3cret",
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (ConsoleSASL{Mechanism: MechScramSHA256, Username: "console", Password: "s3cret"}); cfg.HTTP.ConsoleSASL != want {
		t.Errorf("ConsoleSASL = %+v, want %+v", cfg.HTTP.ConsoleSASL, want)
	}
	if len(unknown) != 0 {
		t.Errorf("unknown keys %v", unknown)
	}
	for k, v := range cfg.Props {
		if strings.Contains(v, "s3cret") {
			t.Errorf("Props[%s] holds the password", k)
		}
	}
	if !cfg.HTTP.ConsoleEnable {
		t.Error("http.console.enable is not on by default")
	}
	for _, bad := range []map[string]string{
		{"http.console.sasl.mechanism": "PLAIN"},
		{"http.console.sasl.mechanism": "GSSAPI", "http.console.sasl.username": "u"},
		{"http.console.sasl.mechanism": "PLAIN,SCRAM-SHA-256", "http.console.sasl.username": "u"},
	} {
		bad["listeners"] = "PLAINTEXT://127.0.0.1:0"
		if _, _, err := ParseConfig(bad); err == nil {
			t.Errorf("ParseConfig(%v): no error", bad)
		}
	}
}

// TestHTTPSListenerTLS: an https:// entry takes listener.name.http.ssl.*
// over ssl.* (ssl.client.auth included, as on an SSL listener); an http://
// one needs none; a keystore is required once there is an https:// one.
func TestHTTPSListenerTLS(t *testing.T) {
	cfg, unknown, err := ParseConfig(map[string]string{
		"listeners":                                "PLAINTEXT://127.0.0.1:0",
		"http.listeners":                           "http://127.0.0.1:9644, https://127.0.0.1:9645",
		"ssl.keystore.type":                        "PEM",
		"ssl.truststore.type":                      "PEM",
		"ssl.keystore.location":                    "/global.pem",
		"ssl.truststore.location":                  "/ca.pem",
		"ssl.client.auth":                          "requested",
		"listener.name.http.ssl.keystore.location": "/http.pem",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 0 {
		t.Errorf("unknown keys %v", unknown)
	}
	want := []HTTPListener{{Host: "127.0.0.1", Port: 9644}, {Host: "127.0.0.1", Port: 9645, TLS: true}}
	if len(cfg.HTTP.Listeners) != 2 || cfg.HTTP.Listeners[0] != want[0] || cfg.HTTP.Listeners[1] != want[1] {
		t.Fatalf("listeners %+v, want %+v", cfg.HTTP.Listeners, want)
	}
	if s := cfg.HTTP.Listeners[1].String(); s != "https://127.0.0.1:9645" {
		t.Errorf("String() = %q", s)
	}
	tc := cfg.HTTP.TLS
	if tc == nil || tc.KeystoreLocation != "/http.pem" || tc.TruststoreLocation != "/ca.pem" || tc.ClientAuth != ClientAuthRequested {
		t.Fatalf("HTTP TLS %+v: want the listener.name.http keystore, the global truststore and ssl.client.auth", tc)
	}
	if cfg.HTTP.Authentication != HTTPAuthNone {
		t.Errorf("http.authentication defaults to %q", cfg.HTTP.Authentication)
	}

	plain, _, err := ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "http.authentication": "BASIC"})
	if err != nil {
		t.Fatal(err)
	}
	if plain.HTTP.TLS != nil || plain.HTTP.Authentication != HTTPAuthBasic {
		t.Errorf("http:// only: TLS %+v, authentication %q", plain.HTTP.TLS, plain.HTTP.Authentication)
	}
	for _, bad := range []map[string]string{
		{"http.listeners": "https://127.0.0.1:9645"}, // no keystore
		{"http.listeners": "https://127.0.0.1:9645", "ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM", "ssl.keystore.location": "/k.pem", "listener.name.http.ssl.client.auth": "required"}, // no truststore
		{"http.listeners": "ftp://127.0.0.1:9645"},
		{"http.authentication": "digest"},
	} {
		bad["listeners"] = "PLAINTEXT://127.0.0.1:0"
		if _, _, err := ParseConfig(bad); err == nil {
			t.Errorf("ParseConfig(%v): no error", bad)
		}
	}
}
