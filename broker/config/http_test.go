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
