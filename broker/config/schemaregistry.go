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
	"schema.registry.listeners": {DefaultSchemaRegistryListeners, kmsg.ConfigTypeList, "Comma-separated URIs (http://host:port) of the built-in Schema Registry (Confluent's REST API; schemas kept in the topic _schemas); empty disables it.", func(c *Config, v string) error {
		ls, err := parseHTTPListeners(v)
		if err != nil {
			return err
		}
		for _, l := range ls {
			if l.TLS {
				return fmt.Errorf("schema registry listener %s: https is not supported yet; use http:// on loopback", l)
			}
		}
		c.SchemaRegistry.Listeners = ls
		return nil
	}},
	"schema.registry.authentication": {HTTPAuthNone, kmsg.ConfigTypeString, "none, or basic: every request to the Schema Registry needs an HTTP Basic login of a SASL user of the broker (PLAIN or SCRAM), as http.authentication.", func(c *Config, v string) (err error) {
		c.SchemaRegistry.Authentication, err = parseHTTPAuthentication(v)
		return err
	}},
}

func init() {
	for k, p := range schemaRegistryProps {
		props[k] = p
	}
}
