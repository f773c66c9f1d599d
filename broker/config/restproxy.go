package config

import (
	"fmt"
	"net/url"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RestProxyConfig is the built-in Confluent REST Proxy (package restproxy):
// its own HTTP listeners, separate from http.listeners because REST Proxy
// clients expect Confluent's port, 8082, and paths at the root.
type RestProxyConfig struct {
	// Listeners is rest.proxy.listeners: the addresses the proxy binds;
	// none disables it.
	Listeners []HTTPListener
	// Authentication is rest.proxy.authentication: HTTPAuthNone or
	// HTTPAuthBasic. With basic every call logs in to Kafka over SASL as
	// the Basic user, so ACLs and quotas apply to that user's principal.
	Authentication string
	// InstanceTimeoutMs is consumer.instance.timeout.ms (Confluent's name):
	// a v2 consumer instance unused that long is closed.
	InstanceTimeoutMs int64
	// MaxRequestBytes is rest.proxy.max.request.bytes: a larger request
	// body is answered 413.
	MaxRequestBytes int64
	// SchemaRegistryURL is schema.registry.url (Confluent's name): the
	// Schema Registry of the avro, protobuf and jsonschema formats; ""
	// means the broker's own (its first http:// schema.registry.listeners
	// entry).
	SchemaRegistryURL string
	// TLS is the configuration of the https:// listeners:
	// listener.name.rest.ssl.* over ssl.*. Invariant (after ParseConfig):
	// non-nil exactly when some listener is https.
	TLS *TLSConfig
}

// restListenerName is the listener name whose listener.name.<l>.ssl.*
// properties configure the proxy's https:// listeners.
const restListenerName = "REST"

// DefaultRestProxyListeners is rest.proxy.listeners' default: Confluent's
// port, loopback only.
const DefaultRestProxyListeners = "http://127.0.0.1:8082"

var restProxyProps = map[string]prop{
	"rest.proxy.listeners": {DefaultRestProxyListeners, kmsg.ConfigTypeList, "Comma-separated URIs (http://host:port or https://host:port, with listener.name.rest.ssl.* or ssl.*) of the built-in Confluent REST Proxy (v2 and v3 APIs); empty disables it.", func(c *Config, v string) (err error) {
		c.RestProxy.Listeners, err = parseHTTPListeners(v)
		return err
	}},
	"rest.proxy.authentication": {HTTPAuthNone, kmsg.ConfigTypeString, "none, or basic: HTTP Basic authentication with a SASL user of the broker (PLAIN or SCRAM); every call then acts as that user, logging in to the broker's first SASL_PLAINTEXT listener with the same credentials, so ACLs and quotas apply. With none the proxy uses the first PLAINTEXT listener.", func(c *Config, v string) (err error) {
		c.RestProxy.Authentication, err = parseHTTPAuthentication(v)
		return err
	}},
	"consumer.instance.timeout.ms": {"300000", kmsg.ConfigTypeInt, "A REST Proxy v2 consumer instance unused for this long is closed (it leaves its group).", intProp(func(c *Config, v int64) { c.RestProxy.InstanceTimeoutMs = v }, 1, 1<<31-1)},
	"schema.registry.url": {"", kmsg.ConfigTypeString, "URL of the Schema Registry the REST Proxy's avro, protobuf and jsonschema formats register and look up schemas in; empty uses this broker's own (its first http:// schema.registry.listeners entry).", func(c *Config, v string) error {
		if v != "" {
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%q is not an http:// or https:// URL", v)
			}
		}
		c.RestProxy.SchemaRegistryURL = v
		return nil
	}},
	"rest.proxy.max.request.bytes": {"16777216", kmsg.ConfigTypeLong, "Largest REST Proxy request body; a larger one is answered 413.", intProp(func(c *Config, v int64) { c.RestProxy.MaxRequestBytes = v }, 1024, 1<<31-1)},
}

func init() {
	for k, p := range restProxyProps {
		props[k] = p
	}
}

// resolveRestProxyTLS sets the TLS configuration of the proxy's https://
// listeners, as resolveHTTPTLS does for the HTTP listener.
func (c *Config) resolveRestProxyTLS(p map[string]string) error {
	if c.RestProxy.Authentication == "" {
		c.RestProxy.Authentication = HTTPAuthNone
	}
	tc, err := listenerTLS(p, c.RestProxy.Listeners, restListenerName)
	if err != nil {
		return fmt.Errorf("rest.proxy.listeners (https): %w", err)
	}
	c.RestProxy.TLS = tc
	return nil
}
