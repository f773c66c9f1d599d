package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// HTTPConfig is the broker's own HTTP listener (broker/httpserver): the
// Prometheus metrics, the health and readiness checks and, when enabled,
// pprof. It is not Kafka's (Kafka has JMX); the names follow Redpanda's
// admin API port, 9644.
type HTTPConfig struct {
	// Listeners is http.listeners: the addresses the HTTP server binds; none
	// disables it.
	Listeners []HTTPListener
	// PprofEnable is http.pprof.enable: serve /debug/pprof/. Off by default,
	// since profiles expose the process's internals.
	PprofEnable bool
	// ConsoleEnable is http.console.enable: serve the web console
	// (broker/console) at /. On by default: the listener is loopback-only
	// unless an operator widens it.
	ConsoleEnable bool
	// ConsoleSASL is what the console logs in with when it should use a
	// SASL_PLAINTEXT listener (and so have a principal of its own for the
	// authorizer) instead of a PLAINTEXT one: http.console.sasl.mechanism,
	// .username and .password. The password is kept out of the props table,
	// as sasl.jaas.config is, so that DescribeConfigs never returns it.
	ConsoleSASL ConsoleSASL
	// TLS is the TLS configuration of the https:// listeners:
	// listener.name.http.ssl.* over ssl.*, as for a Kafka SSL listener
	// named HTTP (ssl.client.auth included). Invariant (after
	// ParseConfig): non-nil exactly when some listener is https.
	TLS *TLSConfig
	// Authentication is http.authentication: HTTPAuthNone or
	// HTTPAuthBasic. /healthz and /readyz are open either way.
	Authentication string
}

// http.authentication values.
const (
	// HTTPAuthNone serves every path to anyone who reaches the listener:
	// the default, fit for the loopback default listener.
	HTTPAuthNone = "none"
	// HTTPAuthBasic asks for HTTP Basic credentials of one of the broker's
	// SASL users (PLAIN or SCRAM) on every path but /healthz and /readyz.
	HTTPAuthBasic = "basic"
)

// httpListenerName is the listener name whose listener.name.<l>.ssl.*
// properties configure the https:// listeners.
const httpListenerName = "HTTP"

// ConsoleSASL are the console's SASL credentials; Mechanism "" means none.
type ConsoleSASL struct {
	Mechanism, Username, Password string
}

// KeyConsoleSASLPassword is the console's SASL password property.
const KeyConsoleSASLPassword = "http.console.sasl.password"

// HTTPListener is one http.listeners entry, http://host:port or
// https://host:port.
type HTTPListener struct {
	Host string
	Port int32
	// TLS is set for https://: the listener serves HTTPConfig.TLS.
	TLS bool
}

// Addr is the host:port to bind.
func (l HTTPListener) Addr() string { return hostPort(l.Host, l.Port) }

func (l HTTPListener) String() string {
	if l.TLS {
		return "https://" + l.Addr()
	}
	return "http://" + l.Addr()
}

// DefaultHTTPListeners is http.listeners' default: loopback only, so that
// metrics and profiles are not exposed until an operator chooses to.
const DefaultHTTPListeners = "http://127.0.0.1:9644"

// httpProps are the properties of HTTPConfig; init adds them to props.
var httpProps = map[string]prop{
	"http.listeners": {DefaultHTTPListeners, kmsg.ConfigTypeList, "Comma-separated URIs (http://host:port or https://host:port, with listener.name.http.ssl.* or ssl.*) of the broker's HTTP server: /metrics, /healthz, /readyz, /debug/pprof/, the web console; empty disables it.", func(c *Config, v string) (err error) {
		c.HTTP.Listeners, err = parseHTTPListeners(v)
		return err
	}},
	"http.authentication": {HTTPAuthNone, kmsg.ConfigTypeString, "none, or basic: HTTP Basic authentication with a SASL user of the broker (PLAIN or SCRAM) on every path of the HTTP listeners but /healthz and /readyz. Use basic, over https, on a listener that is not loopback.", func(c *Config, v string) (err error) {
		c.HTTP.Authentication, err = parseHTTPAuthentication(v)
		return err
	}},
	"http.pprof.enable":   {"false", kmsg.ConfigTypeBoolean, "Serve Go's profiles at /debug/pprof/ on the HTTP listeners.", boolProp(func(c *Config, v bool) { c.HTTP.PprofEnable = v })},
	"http.console.enable": {"true", kmsg.ConfigTypeBoolean, "Serve the web console at / on the HTTP listeners (it acts as a Kafka client of this broker's first PLAINTEXT listener).", boolProp(func(c *Config, v bool) { c.HTTP.ConsoleEnable = v })},
	"http.console.sasl.mechanism": {"", kmsg.ConfigTypeString, "SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) the web console logs in with on this broker's first SASL_PLAINTEXT listener; empty: the console uses a PLAINTEXT listener.", func(c *Config, v string) error {
		ms, err := parseClientSASLMechanisms(v)
		if err != nil {
			return err
		}
		if len(ms) > 1 {
			return fmt.Errorf("%q names more than one mechanism", v)
		}
		c.HTTP.ConsoleSASL.Mechanism = strings.TrimSpace(v)
		return nil
	}},
	"http.console.sasl.username": {"", kmsg.ConfigTypeString, "The web console's SASL user (with http.console.sasl.mechanism; its password is http.console.sasl.password).", func(c *Config, v string) error {
		c.HTTP.ConsoleSASL.Username = v
		return nil
	}},
}

// resolveHTTPTLS sets the TLS configuration of the https:// listeners:
// each ssl.* property from listener.name.http.ssl.* when set there, else
// from ssl.*. As on a Kafka SSL listener, ssl.client.auth applies
// unprefixed too.
func (c *Config) resolveHTTPTLS(p map[string]string) error {
	if c.HTTP.Authentication == "" {
		c.HTTP.Authentication = HTTPAuthNone
	}
	tc, err := listenerTLS(p, c.HTTP.Listeners, httpListenerName)
	if err != nil {
		return fmt.Errorf("http.listeners (https): %w", err)
	}
	c.HTTP.TLS = tc
	return nil
}

// listenerTLS is the TLS configuration of the https:// entries of ls (nil
// without one): each ssl.* property from listener.name.<name>.ssl.* when
// set there, else from ssl.*.
func listenerTLS(p map[string]string, ls []HTTPListener, listenerName string) (*TLSConfig, error) {
	if !slices.ContainsFunc(ls, func(l HTTPListener) bool { return l.TLS }) {
		return nil, nil
	}
	prefix := listenerKeyPrefix + strings.ToLower(listenerName) + "."
	perListener := map[string]string{}
	for k, v := range p {
		if name, rest, ok := listenerKey(k); ok && name == listenerName && strings.HasPrefix(rest, sslPrefix) {
			perListener[rest] = v
		}
	}
	return parseTLS(func(key string) (v, from string, set bool) {
		if v, ok := perListener[key]; ok {
			return strings.TrimSpace(v), prefix + key, true
		}
		if v, ok := p[key]; ok {
			return strings.TrimSpace(v), key, true
		}
		return "", key, false
	})
}

// resolveConsoleSASL reads the console's password (outside the props table)
// and checks that a mechanism comes with a user.
func (c *Config) resolveConsoleSASL(p map[string]string) error {
	c.HTTP.ConsoleSASL.Password = p[KeyConsoleSASLPassword]
	if cs := c.HTTP.ConsoleSASL; cs.Mechanism != "" && cs.Username == "" {
		return fmt.Errorf("config http.console.sasl.mechanism: set http.console.sasl.username (and %s) too", KeyConsoleSASLPassword)
	}
	return nil
}

func init() {
	for k, p := range httpProps {
		props[k] = p
	}
}

// parseHTTPAuthentication reads an HTTPAuthNone or HTTPAuthBasic value.
func parseHTTPAuthentication(v string) (string, error) {
	switch a := strings.ToLower(strings.TrimSpace(v)); a {
	case HTTPAuthNone, HTTPAuthBasic:
		return a, nil
	}
	return "", fmt.Errorf("%q is not none or basic", v)
}

// parseHTTPListeners parses "http://host:port,https://host:port,..."; an
// empty host binds every interface.
func parseHTTPListeners(v string) ([]HTTPListener, error) {
	var out []HTTPListener
	for _, s := range SplitList(v) {
		scheme, addr, ok := strings.Cut(s, "://")
		if !ok || !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
			return nil, fmt.Errorf("http listener %q is not http://host:port or https://host:port", s)
		}
		host, ps, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("http listener %q is not http(s)://host:port", s)
		}
		port, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("http listener %q has no valid port", s)
		}
		out = append(out, HTTPListener{Host: host, Port: int32(port), TLS: strings.EqualFold(scheme, "https")})
	}
	return out, nil
}
