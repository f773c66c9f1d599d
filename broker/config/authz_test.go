package config

import (
	"slices"
	"testing"
)

func TestAuthzConfig(t *testing.T) {
	base := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0"}
	cfg, _, err := ParseConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Authz.Enabled || cfg.Authz.AllowEveryoneIfNoACL || len(cfg.Authz.SuperUsers) != 0 {
		t.Fatalf("defaults: %+v, want no authorizer", cfg.Authz)
	}
	for _, class := range []string{AclAuthorizerClass, StandardAuthorizerClass} {
		p := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "authorizer.class.name": class,
			"super.users": "User:admin; User:CN=broker,O=kbroker", "allow.everyone.if.no.acl.found": "true"}
		cfg, _, err := ParseConfig(p)
		if err != nil {
			t.Fatalf("%s: %v", class, err)
		}
		if !cfg.Authz.Enabled || !cfg.Authz.AllowEveryoneIfNoACL ||
			!slices.Equal(cfg.Authz.SuperUsers, []string{"User:admin", "User:CN=broker,O=kbroker"}) {
			t.Fatalf("%s: %+v", class, cfg.Authz)
		}
	}
	for k, v := range map[string]string{
		"authorizer.class.name": "com.example.MyAuthorizer",
		"super.users":           "admin",
	} {
		if _, _, err := ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", k: v}); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
}
