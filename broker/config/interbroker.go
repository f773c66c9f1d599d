package config

// The client side of the inter-broker listener: how this broker's own
// connections to other brokers (replica fetchers, the controller's channel,
// controlled shutdown) encrypt and authenticate, with Kafka's properties.
//
//	security.inter.broker.protocol / inter.broker.listener.name   which listener (cluster.go)
//	sasl.mechanism.inter.broker.protocol   PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's default GSSAPI is refused)
//	listener.name.<l>.<mech>.sasl.jaas.config   its username="…" password="…" options are the client's credentials
//	sasl.jaas.config                            the same, for every listener without the above
//	ssl.* of the listener                       keystore = client certificate, truststore = the CAs peers must chain to,
//	                                            ssl.endpoint.identification.algorithm (https: check the peer's host name)

import (
	"fmt"
	"slices"
	"strings"
)

const keyInterBrokerMechanism = "sasl.mechanism.inter.broker.protocol"

// InterBrokerClient is how this broker dials other brokers. Password is a
// secret: it never appears in DescribeConfigs or a log line.
type InterBrokerClient struct {
	// Listener is the inter-broker listener, with TLS set when its
	// protocol is SSL or SASL_SSL.
	Listener Listener
	// Mechanism is the SASL mechanism ("" when the listener has no SASL).
	Mechanism          string
	Username, Password string
}

// resolveInterBroker fills c.InterBroker in cluster mode.
func (c *Config) resolveInterBroker(p map[string]string) error {
	if !c.Cluster.Enabled() {
		return nil
	}
	ib := c.InterBrokerListener()
	for _, l := range c.Listeners {
		if l.Name == ib.Name {
			ib.TLS = l.TLS
		}
	}
	c.InterBroker = InterBrokerClient{Listener: ib}
	if !ib.IsSASL() {
		return nil
	}
	mech := strings.ToUpper(strings.TrimSpace(p[keyInterBrokerMechanism]))
	if mech == "" {
		mech = "GSSAPI" // Kafka's default
	}
	if _, err := parseClientSASLMechanisms(mech); err != nil {
		return fmt.Errorf("config %s: %w", keyInterBrokerMechanism, err)
	}
	if !slices.Contains(c.SASL.MechanismsFor(ib.Name), mech) {
		return fmt.Errorf("config %s: %s is not enabled on the inter-broker listener %s (enabled: %v)", keyInterBrokerMechanism, mech, ib.Name, c.SASL.MechanismsFor(ib.Name))
	}
	key := listenerKeyPrefix + strings.ToLower(ib.Name) + "." + strings.ToLower(mech) + ".sasl.jaas.config"
	v, ok := p[key]
	if !ok {
		key = keyJAAS
		v, ok = p[key]
	}
	if !ok {
		return fmt.Errorf("config %s: the inter-broker listener %s uses SASL %s, but neither %s nor %s gives this broker's username and password",
			keyInterBrokerMechanism, ib.Name, mech, listenerKeyPrefix+strings.ToLower(ib.Name)+"."+strings.ToLower(mech)+".sasl.jaas.config", keyJAAS)
	}
	jm, err := parseJAAS(v)
	if err != nil {
		return fmt.Errorf("config %s: %w", key, err)
	}
	user, pass := jm.Options["username"], jm.Options["password"]
	if user == "" || pass == "" {
		return fmt.Errorf("config %s: the inter-broker client needs username=\"…\" and password=\"…\" options", key)
	}
	c.InterBroker.Mechanism, c.InterBroker.Username, c.InterBroker.Password = mech, user, pass
	return nil
}
