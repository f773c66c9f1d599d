package config

// Authorization properties (Kafka's names and defaults):
//
//	authorizer.class.name             empty: no authorizer, every request allowed (Kafka's default)
//	super.users                       User:admin;User:broker — principals allowed everything
//	allow.everyone.if.no.acl.found    false — a resource without ACLs is denied
//
// Both of Kafka's ACL authorizers are accepted by their class names; they
// decide alike (broker/authz).

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's ACL authorizer classes, which authorizer.class.name may name.
const (
	AclAuthorizerClass      = "kafka.security.authorizer.AclAuthorizer"
	StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
)

// AuthzConfig is the authorization part of Config.
type AuthzConfig struct {
	// Enabled is set when authorizer.class.name names an ACL authorizer.
	Enabled bool
	// SuperUsers are the principals of super.users ("User:admin").
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACL bool
}

var authzProps = map[string]prop{
	"authorizer.class.name": {"", kmsg.ConfigTypeString, "The authorizer: kafka.security.authorizer.AclAuthorizer or org.apache.kafka.metadata.authorizer.StandardAuthorizer (empty: none, every request is allowed).", func(c *Config, v string) error {
		switch v = strings.TrimSpace(v); v {
		case "":
			c.Authz.Enabled = false
		case AclAuthorizerClass, StandardAuthorizerClass:
			c.Authz.Enabled = true
		default:
			return fmt.Errorf("unknown authorizer %q (kbroker has %s and %s)", v, AclAuthorizerClass, StandardAuthorizerClass)
		}
		return nil
	}},
	"super.users": {"", kmsg.ConfigTypeString, "The principals allowed every operation, separated by semicolons (User:admin;User:broker).", func(c *Config, v string) error {
		c.Authz.SuperUsers = nil
		for _, s := range strings.Split(v, ";") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			if typ, name, ok := strings.Cut(s, ":"); !ok || typ == "" || name == "" {
				return fmt.Errorf("super user %q is not Type:name (User:admin)", s)
			}
			c.Authz.SuperUsers = append(c.Authz.SuperUsers, s)
		}
		return nil
	}},
	"allow.everyone.if.no.acl.found": {"false", kmsg.ConfigTypeBoolean, "Whether a resource no ACL applies to is allowed to everyone.", boolProp(func(c *Config, v bool) { c.Authz.AllowEveryoneIfNoACL = v })},
}

func init() {
	for k, p := range authzProps {
		props[k] = p
	}
}
