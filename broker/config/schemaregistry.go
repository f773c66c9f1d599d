package config

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SchemaRegistryConfig is the built-in Schema Registry (the schemaregistry
// package): Confluent Schema Registry's REST API on its own HTTP
// listeners, its schemas in the topic _schemas.
type SchemaRegistryConfig struct {
	// Listeners is schema.registry.listeners: the addresses the registry's
	// REST API binds; none disables the registry.
	Listeners []HTTPListener
	// TLS is the TLS configuration of the https:// listeners:
	// listener.name.schema_registry.ssl.* over ssl.*. Invariant (after
	// ParseConfig): non-nil exactly when some listener is https.
	TLS *TLSConfig
	// Authentication is schema.registry.authentication: HTTPAuthNone or
	// HTTPAuthBasic (a login of one of the broker's SASL users, as
	// http.authentication).
	Authentication string
}

// DefaultSchemaRegistryListeners is schema.registry.listeners' default:
// Confluent Schema Registry's port, on loopback only.
const DefaultSchemaRegistryListeners = "http://127.0.0.1:8081"

// schemaRegistryProps are the properties of SchemaRegistryConfig; init
// adds them to props.
var schemaRegistryProps = map[string]prop{
	"schema.registry.listeners": {DefaultSchemaRegistryListeners, kmsg.ConfigTypeList, "Comma-separated URIs (http://host:port or https://host:port, with listener.name.schema_registry.ssl.* or ssl.*) of the built-in Schema Registry (Confluent's REST API; schemas kept in the topic _schemas); empty disables it.", func(c *Config, v string) (err error) {
		c.SchemaRegistry.Listeners, err = parseHTTPListeners(v)
		return err
	}},
	"schema.registry.authentication": {HTTPAuthNone, kmsg.ConfigTypeString, "none, or basic: every request to the Schema Registry needs an HTTP Basic login of a SASL user of the broker (PLAIN or SCRAM), as http.authentication.", func(c *Config, v string) (err error) {
		c.SchemaRegistry.Authentication, err = parseHTTPAuthentication(v)
		return err
	}},
}

// schemaRegistryListenerName is the listener name whose
// listener.name.<l>.ssl.* properties configure the registry's https://
// listeners.
const schemaRegistryListenerName = "SCHEMA_REGISTRY"

// resolveSchemaRegistryTLS sets the TLS configuration of the registry's
// https:// listeners, as resolveHTTPTLS does for the HTTP listener's.
func (c *Config) resolveSchemaRegistryTLS(p map[string]string) error {
	tc, err := listenerTLS(p, c.SchemaRegistry.Listeners, schemaRegistryListenerName)
	if err != nil {
		return fmt.Errorf("schema.registry.listeners (https): %w", err)
	}
	c.SchemaRegistry.TLS = tc
	return nil
}

func init() {
	for k, p := range schemaRegistryProps {
		props[k] = p
	}
}
