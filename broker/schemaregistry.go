package broker

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/kbroker/kbroker/broker/authz"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/httpserver"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/schemaregistry"
)

// startSchemaRegistry binds the Schema Registry's listeners
// (schema.registry.listeners) in New, as the HTTP listener is bound, so a
// port in use fails start-up. The registry is a Kafka client of this
// broker (registryBootstrap); it connects once Start opened the listeners
// (Broker.Start calls registry.Start). With no listener it can use it is
// not served (logged once).
func (b *Broker) startSchemaRegistry() error {
	ls := b.cfg.SchemaRegistry.Listeners
	if len(ls) == 0 {
		return nil
	}
	if !b.hasPlaintextListener() && b.cfg.InterBroker.Listener.Name == "" {
		b.log.Warn("schema registry not started: it needs a PLAINTEXT listener on this broker, or (in a cluster) the inter-broker listener and its credentials", "schema.registry.listeners", ls)
		return nil
	}
	log := b.log.With("server", "schema-registry")
	var auth *httpserver.BasicAuth
	if b.cfg.SchemaRegistry.Authentication == config.HTTPAuthBasic {
		auth = b.basicAuth() // observe.go
	}
	var tlsConf *tls.Config
	if tc := b.cfg.SchemaRegistry.TLS; tc != nil {
		var err error
		if tlsConf, err = network.ServerTLSConfig("SCHEMA_REGISTRY", tc, log); err != nil {
			return fmt.Errorf("schema.registry.listeners: %w", err)
		}
	}
	rc := schemaregistry.Config{
		Bootstrap: b.registryBootstrap,
		NodeID:    b.cfg.NodeID,
		Logger:    log,
	}
	if tc := b.cfg.SchemaRegistry.TLS; tc != nil {
		// Writes forwarded to another broker's https:// registry check its
		// certificate against the registry's truststore (and present the
		// keystore's, for ssl.client.auth).
		var err error
		if rc.ForwardTLS, err = network.ClientTLS(tc); err != nil {
			return fmt.Errorf("schema.registry.listeners (forwarding to https): %w", err)
		}
	}
	if b.cfg.Authz.Enabled {
		rc.AuthorizeWrite = b.authorizeRegistryWrite
	}
	b.registry = schemaregistry.New(rc)
	b.registryHTTP = httpserver.New(httpserver.Config{
		Listeners: ls,
		Console:   b.registry.Handler(), // every path but the probes
		Ready:     b.registry.Ready,     // /readyz: 503 until _schemas is loaded
		Auth:      auth,
		TLS:       tlsConf,
		Logger:    log,
	})
	if err := b.registryHTTP.Start(); err != nil {
		return fmt.Errorf("schema.registry.listeners: %w", err)
	}
	for _, a := range b.registryHTTP.Addrs() {
		if tcp, ok := a.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && auth == nil {
			log.Warn("the Schema Registry listens beyond loopback without authentication: whoever reaches it can register and delete schemas", "addr", a.String())
		}
	}
	return nil
}

// authorizeRegistryWrite: a registry write needs what a Kafka client
// writing the registry's records would need, WRITE on Topic:_schemas, as
// the Basic user (User:ANONYMOUS without a login).
func (b *Broker) authorizeRegistryWrite(user, host string) bool {
	principal := network.AnonymousPrincipal
	if user != "" {
		principal = "User:" + user
	}
	return b.ready.Load() && b.api.AuthorizeUser(principal, host, authz.OpWrite, authz.Topic(schemaregistry.DefaultTopic))
}

// hasPlaintextListener reports whether a listener has neither SASL nor
// TLS.
func (b *Broker) hasPlaintextListener() bool {
	return slices.ContainsFunc(b.cfg.Listeners, func(l config.Listener) bool {
		return !l.IsSASL() && l.SecurityProtocol != config.ProtoSSL
	})
}

// registryBootstrap is the listener the registry dials, once the
// listeners are open: the first PLAINTEXT one over loopback, else the
// inter-broker listener at its advertised address with this broker's
// inter-broker TLS and SASL login, so the registry then acts as the
// broker's own principal (a super user in a secured cluster, as the
// brokers need to be).
func (b *Broker) registryBootstrap() (schemaregistry.Endpoint, error) {
	if !b.ready.Load() {
		return schemaregistry.Endpoint{}, errNotReady
	}
	if addr, ok := b.loopbackListener(false); ok {
		return schemaregistry.Endpoint{Addr: addr}, nil
	}
	ib := b.cfg.InterBroker
	if ib.Listener.Name == "" {
		return schemaregistry.Endpoint{}, fmt.Errorf("no PLAINTEXT listener and no inter-broker client for the schema registry")
	}
	o, err := interBrokerConn(ib)
	if err != nil {
		return schemaregistry.Endpoint{}, fmt.Errorf("schema registry: %w", err)
	}
	for _, e := range b.registration().Endpoints {
		if e.Listener == ib.Listener.Name {
			return schemaregistry.Endpoint{Addr: net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), SASL: o.SASL, TLS: o.TLS}, nil
		}
	}
	return schemaregistry.Endpoint{}, fmt.Errorf("schema registry: the inter-broker listener %s is not advertised", ib.Listener.Name)
}

// startRegistryReader starts the registry's reader of _schemas once the
// Kafka listeners are open.
func (b *Broker) startRegistryReader() {
	if b.registry != nil {
		b.registry.Start()
	}
}

// closeSchemaRegistry closes the registry (its reader and Kafka client)
// before the Kafka listeners close, then its HTTP listeners.
func (b *Broker) closeSchemaRegistry() {
	if b.registry != nil {
		b.registry.Close()
	}
	if b.registryHTTP != nil {
		b.registryHTTP.Close()
	}
}

// SchemaRegistryAddrs returns the bound Schema Registry listener
// addresses (useful with port 0); none when it is off.
func (b *Broker) SchemaRegistryAddrs() []net.Addr {
	if b.registryHTTP == nil {
		return nil
	}
	return b.registryHTTP.Addrs()
}
