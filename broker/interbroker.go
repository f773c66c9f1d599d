package broker

import (
	"fmt"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// interBrokerConn is how this broker's connections to other brokers
// (replica fetchers, the controller's channel, controlled shutdown) encrypt
// and authenticate on the inter-broker listener (config.InterBrokerClient).
// Each user sets its own ClientID.
func interBrokerConn(ib config.InterBrokerClient) (kconn.Options, error) {
	var o kconn.Options
	switch ib.Listener.SecurityProtocol {
	case config.ProtoSSL, config.ProtoSASLSSL:
		tc, err := network.ClientTLS(ib.Listener.TLS)
		if err != nil {
			return o, fmt.Errorf("inter-broker listener %s: %w", ib.Listener.Name, err)
		}
		o.TLS = tc
	}
	m, err := saslMechanism(ib.Mechanism, ib.Username, ib.Password)
	if err != nil {
		return o, fmt.Errorf("inter-broker listener %s: %w", ib.Listener.Name, err)
	}
	o.SASL = m
	return o, nil
}

// saslMechanism is the client side of a SASL mechanism kbroker's own
// clients (the inter-broker connections, the console) log in with; nil for
// "" (no SASL).
func saslMechanism(name, user, pass string) (sasl.Mechanism, error) {
	switch name {
	case "":
		return nil, nil
	case config.MechPlain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case config.MechScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case config.MechScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %s is not supported for kbroker's own connections", name)
}
