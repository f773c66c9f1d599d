package config

// OAUTHBEARER and the timing of SASL authentication, with Kafka's names:
//
//	listener.name.<l>.oauthbearer.sasl.jaas.config      OAuthBearerLoginModule with the unsecured validator's options
//	                                                    (unsecuredValidatorPrincipalClaimName, unsecuredValidatorScopeClaimName,
//	                                                    unsecuredValidatorRequiredScope, unsecuredValidatorAllowableClockSkewMs)
//	listener.name.<l>.oauthbearer.sasl.server.callback.handler.class
//	                                                    unset or OAuthBearerUnsecuredValidatorCallbackHandler: the unsecured
//	                                                    validator (development only, as in Kafka); OAuthBearerValidatorCallbackHandler:
//	                                                    the JWKS validator with the sasl.oauthbearer.* settings below
//	sasl.oauthbearer.jwks.endpoint.url, .jwks.endpoint.refresh.ms, .expected.audience, .expected.issuer,
//	sasl.oauthbearer.sub.claim.name, .scope.claim.name, .clock.skew.seconds
//	connection.failed.authentication.delay.ms           a failed authentication's answer waits this long (default 100)
//	connections.max.reauth.ms                           KIP-368 session lifetime (default 0: none)

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	MechOAuthBearer = "OAUTHBEARER"

	oauthLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	// The server callback handlers of OAUTHBEARER.
	oauthUnsecuredHandler = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
	oauthJWKSHandler      = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	oauthJWKSHandlerOld   = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
)

// OAuthConfig is OAUTHBEARER's part of SASLConfig.
type OAuthConfig struct {
	// Listeners maps a listener name to its validator settings, for every
	// SASL listener with OAUTHBEARER enabled.
	Listeners map[string]OAuthListener
	// JWKS are the sasl.oauthbearer.* settings of the JWKS validator.
	JWKS OAuthJWKS
}

// OAuthListener is one listener's OAUTHBEARER validator.
type OAuthListener struct {
	// JWKS selects the JWKS validator; otherwise the unsecured one.
	JWKS bool
	// The unsecured validator's JAAS options.
	PrincipalClaim       string
	ScopeClaim           string
	RequiredScope        []string
	AllowableClockSkewMs int64
}

// OAuthJWKS are the broker's sasl.oauthbearer.* settings.
type OAuthJWKS struct {
	URL              string
	RefreshMs        int64
	ExpectedAudience []string
	ExpectedIssuer   string
	SubClaim         string
	ScopeClaim       string
	ClockSkewSeconds int64
}

var oauthProps = map[string]prop{
	"sasl.oauthbearer.jwks.endpoint.url": {"", kmsg.ConfigTypeString, "The OAuth/OIDC provider URL from which the provider's JWKS can be retrieved.",
		func(c *Config, v string) error { c.SASL.OAuth.JWKS.URL = strings.TrimSpace(v); return nil }},
	"sasl.oauthbearer.jwks.endpoint.refresh.ms": {"3600000", kmsg.ConfigTypeLong, "How often the JWKS is fetched again.",
		intProp(func(c *Config, v int64) { c.SASL.OAuth.JWKS.RefreshMs = v }, 1, math.MaxInt64)},
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms":     {"100", kmsg.ConfigTypeLong, "Accepted for compatibility.", intProp(func(*Config, int64) {}, 0, math.MaxInt64)},
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": {"10000", kmsg.ConfigTypeLong, "Accepted for compatibility.", intProp(func(*Config, int64) {}, 0, math.MaxInt64)},
	"sasl.oauthbearer.expected.audience": {"", kmsg.ConfigTypeList, "The audiences a token's aud claim must name one of.",
		func(c *Config, v string) error { c.SASL.OAuth.JWKS.ExpectedAudience = SplitList(v); return nil }},
	"sasl.oauthbearer.expected.issuer": {"", kmsg.ConfigTypeString, "The issuer a token's iss claim must equal.",
		func(c *Config, v string) error { c.SASL.OAuth.JWKS.ExpectedIssuer = strings.TrimSpace(v); return nil }},
	"sasl.oauthbearer.sub.claim.name": {"sub", kmsg.ConfigTypeString, "The claim holding the principal's name.",
		func(c *Config, v string) error { c.SASL.OAuth.JWKS.SubClaim = strings.TrimSpace(v); return nil }},
	"sasl.oauthbearer.scope.claim.name": {"scope", kmsg.ConfigTypeString, "The claim holding the token's scope.",
		func(c *Config, v string) error { c.SASL.OAuth.JWKS.ScopeClaim = strings.TrimSpace(v); return nil }},
	"sasl.oauthbearer.clock.skew.seconds": {"30", kmsg.ConfigTypeInt, "The clock skew allowed between the broker and the token's issuer.",
		intProp(func(c *Config, v int64) { c.SASL.OAuth.JWKS.ClockSkewSeconds = v }, 0, math.MaxInt32)},
	"connection.failed.authentication.delay.ms": {"100", kmsg.ConfigTypeInt, "How long the answer to a failed authentication waits before the connection is closed.",
		intProp(func(c *Config, v int64) { c.SASL.FailedAuthenticationDelayMs = v }, 0, math.MaxInt32)},
	"connections.max.reauth.ms": {"0", kmsg.ConfigTypeLong, "The most a SASL session lives before the client must re-authenticate (0: no limit).",
		intProp(func(c *Config, v int64) { c.SASL.ConnectionsMaxReauthMs = v }, 0, math.MaxInt64)},
}

func init() {
	for k, p := range oauthProps {
		props[k] = p
	}
}

// isOAuthListenerKey reports whether rest (after listener.name.<l>.) is an
// OAUTHBEARER server callback handler setting.
func isOAuthListenerKey(rest string) bool {
	return strings.EqualFold(rest, "oauthbearer.sasl.server.callback.handler.class")
}

// resolveOAuth gives every SASL listener with OAUTHBEARER enabled its
// validator: the handler class of listener.name.<l>.oauthbearer.sasl.server.callback.handler.class
// and the OAuthBearerLoginModule options of its JAAS config (the
// listener's, else sasl.jaas.config).
func (c *Config) resolveOAuth(p map[string]string) error {
	global := map[string]string(nil)
	if v, ok := p[keyJAAS]; ok {
		if jm, err := parseJAAS(v); err == nil && jm.Class == oauthLoginModule {
			global = jm.Options
		}
	}
	for _, l := range c.Listeners {
		if !l.IsSASL() {
			continue
		}
		enabled := false
		for _, m := range c.SASL.MechanismsFor(l.Name) {
			enabled = enabled || m == MechOAuthBearer
		}
		if !enabled {
			continue
		}
		prefix := listenerKeyPrefix + strings.ToLower(l.Name) + ".oauthbearer."
		opts := global
		var handler string
		for k, v := range p {
			if !strings.HasPrefix(strings.ToLower(k), prefix) {
				continue
			}
			switch strings.ToLower(k[len(prefix):]) {
			case "sasl.jaas.config":
				jm, err := parseJAAS(v)
				if err != nil {
					return fmt.Errorf("config %s: %w", k, err)
				}
				if jm.Class != oauthLoginModule {
					return fmt.Errorf("config %s: login module %s is not %s", k, jm.Class, oauthLoginModule)
				}
				opts = jm.Options
			case "sasl.server.callback.handler.class":
				handler = strings.TrimSpace(v)
			}
		}
		ol := OAuthListener{PrincipalClaim: opts["unsecuredValidatorPrincipalClaimName"], ScopeClaim: opts["unsecuredValidatorScopeClaimName"],
			RequiredScope: strings.Fields(opts["unsecuredValidatorRequiredScope"])}
		if s := opts["unsecuredValidatorAllowableClockSkewMs"]; s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("config %s: unsecuredValidatorAllowableClockSkewMs %q is not a non-negative integer", prefix+"sasl.jaas.config", s)
			}
			ol.AllowableClockSkewMs = n
		}
		switch handler {
		case "", oauthUnsecuredHandler:
		case oauthJWKSHandler, oauthJWKSHandlerOld:
			if c.SASL.OAuth.JWKS.URL == "" {
				return fmt.Errorf("config %ssasl.server.callback.handler.class: %s needs sasl.oauthbearer.jwks.endpoint.url", prefix, handler)
			}
			ol.JWKS = true
		default:
			return fmt.Errorf("config %ssasl.server.callback.handler.class: %s is not supported (supported: %s, %s)", prefix, handler, oauthUnsecuredHandler, oauthJWKSHandler)
		}
		if c.SASL.OAuth.Listeners == nil {
			c.SASL.OAuth.Listeners = map[string]OAuthListener{}
		}
		c.SASL.OAuth.Listeners[l.Name] = ol
	}
	return nil
}

// parseClientSASLMechanisms is parseSASLMechanisms for the broker's own
// clients (inter-broker, the web console), which log in with a username
// and password: OAUTHBEARER is for clients with a token.
func parseClientSASLMechanisms(v string) ([]string, error) {
	ms, err := parseSASLMechanisms(v)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m == MechOAuthBearer {
			return nil, fmt.Errorf("the broker's own clients cannot log in with %s (supported: %s)", m, defaultSASLMechanisms)
		}
	}
	return ms, nil
}
