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
	var m sasl.Mechanism
	switch ib.Mechanism {
	case "":
	case config.MechPlain:
		m = plain.Auth{User: ib.Username, Pass: ib.Password}.AsMechanism()
	case config.MechScramSHA256:
		m = scram.Auth{User: ib.Username, Pass: ib.Password}.AsSha256Mechanism()
	case config.MechScramSHA512:
		m = scram.Auth{User: ib.Username, Pass: ib.Password}.AsSha512Mechanism()
	default:
		return o, fmt.Errorf("inter-broker listener %s: SASL mechanism %s is not supported", ib.Listener.Name, ib.Mechanism)
	}
	o.SASL = m
	return o, nil
}
