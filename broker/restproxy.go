package broker

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/httpserver"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/network/sasl"
	"github.com/kbroker/kbroker/restproxy"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
)

// errNoRestProxyListener: the proxy dials a plaintext listener of this
// broker (it does not speak TLS to Kafka yet).
var (
	errNoRestProxyListener     = errors.New("the REST proxy needs a PLAINTEXT listener on this broker (a SASL_PLAINTEXT one with rest.proxy.authentication=basic)")
	errRestProxyLoginMechanism = errors.New("the user's password is right but no mechanism enabled on the SASL_PLAINTEXT listener can log them in")
)

// startRestProxy starts the Confluent REST Proxy (rest.proxy.listeners) at
// the beginning of New, before the HTTP listener (whose console links to
// it): it answers 50003 until the Kafka listeners are open. A listener
// that cannot bind fails New.
func (b *Broker) startRestProxy() error {
	rc := b.cfg.RestProxy
	if len(rc.Listeners) == 0 {
		return nil
	}
	pcfg := restproxy.Config{
		Bootstrap:       b.restProxyBootstrap,
		InstanceTimeout: time.Duration(rc.InstanceTimeoutMs) * time.Millisecond,
		MaxRequestBytes: rc.MaxRequestBytes,
		SchemaRegistry:  b.restProxyRegistry,
		Logger:          b.log.With("component", "rest-proxy"),
	}
	if tc := b.cfg.SchemaRegistry.TLS; tc != nil {
		// An https:// registry (this broker's own, or schema.registry.url)
		// is trusted as the registry's truststore says.
		var err error
		if pcfg.RegistryTLS, err = network.ClientTLS(tc); err != nil {
			return fmt.Errorf("rest.proxy.listeners (Schema Registry over https): %w", err)
		}
	}
	if rc.Authentication == config.HTTPAuthBasic {
		pcfg.Login = b.restProxyLogin()
		pcfg.LoginFailureDelay = time.Duration(b.cfg.SASL.FailedAuthenticationDelayMs) * time.Millisecond
	}
	b.restProxy = restproxy.New(pcfg)
	var err error
	srvCfg := httpserver.Config{
		Listeners: rc.Listeners,
		Console:   b.restProxy.Handler(), // every path but the probes
		Exposure: func(https bool) string {
			switch {
			case rc.Authentication != config.HTTPAuthBasic:
				return "rest proxy listener is not loopback and rest.proxy.authentication=none: whoever reaches it produces, consumes and administers as User:ANONYMOUS; set rest.proxy.authentication=basic"
			case !https:
				return "rest proxy listener is not loopback and not https: Basic logins cross the network in clear text; use https://"
			}
			return ""
		},
		Logger: b.log.With("component", "rest-proxy"),
	}
	if rc.TLS != nil {
		if srvCfg.TLS, err = network.ServerTLSConfig("REST", rc.TLS, b.log); err != nil {
			return fmt.Errorf("rest.proxy.listeners: %w", err)
		}
	}
	b.restHTTP = httpserver.New(srvCfg)
	if err := b.restHTTP.Start(); err != nil {
		return fmt.Errorf("rest.proxy.listeners: %w", err)
	}
	return nil
}

// restProxyRegistry is the Schema Registry of the proxy's schema formats:
// schema.registry.url, else this broker's own first http:// listener, else
// its first https:// one (trusted through the registry's truststore).
func (b *Broker) restProxyRegistry() (string, error) {
	if u := b.cfg.RestProxy.SchemaRegistryURL; u != "" {
		return u, nil
	}
	if b.registryHTTP != nil {
		addrs := b.registryHTTP.Addrs()
		for _, https := range []bool{false, true} {
			for i, l := range b.cfg.SchemaRegistry.Listeners {
				if l.TLS != https || i >= len(addrs) {
					continue
				}
				if https {
					return "https://" + addrs[i].String(), nil
				}
				return "http://" + addrs[i].String(), nil
			}
		}
	}
	return "", errors.New("no Schema Registry: this broker serves none (schema.registry.listeners) and schema.registry.url is not set")
}

// restProxyListener is the Kafka listener the proxy dials: the first
// SASL_PLAINTEXT one with a login, else the first PLAINTEXT one.
func (b *Broker) restProxyListener() (config.Listener, int, bool) {
	basic := b.cfg.RestProxy.Authentication == config.HTTPAuthBasic
	for i, l := range b.cfg.Listeners {
		if l.SecurityProtocol == "PLAINTEXT" && !basic || l.SecurityProtocol == config.ProtoSASLPlaintext && basic {
			return l, i, true
		}
	}
	return config.Listener{}, 0, false
}

// restProxyBootstrap is the address the proxy dials (a wildcard bind
// becomes loopback); it fails until Start opened the listeners.
func (b *Broker) restProxyBootstrap() (string, error) {
	if !b.ready.Load() {
		return "", errNotReady
	}
	_, i, ok := b.restProxyListener()
	addrs := b.Addrs()
	if !ok || i >= len(addrs) {
		return "", errNoRestProxyListener
	}
	tcp, ok := addrs[i].(*net.TCPAddr)
	if !ok {
		return "", errNoRestProxyListener
	}
	ip := tcp.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port)), nil
}

// restProxyLogin checks a Basic login against the broker's SASL users
// (as the HTTP listener does) and picks the mechanism that logs the user
// in to the proxy's SASL_PLAINTEXT listener with the same password: PLAIN
// when they are a PLAIN user of it, else their SCRAM credential.
func (b *Broker) restProxyLogin() func(user, password string) (kgosasl.Mechanism, error) {
	scram := func(user, mechanism string) (sasl.Credential, bool) {
		if !b.ready.Load() {
			return sasl.Credential{}, false
		}
		c, ok := b.store.ScramCredential(user, mechanism)
		return sasl.Credential(c), ok
	}
	users := sasl.NewPasswords(b.cfg.SASL.PlainUsers, scram)
	return func(user, password string) (kgosasl.Mechanism, error) {
		if !users.Check(user, password) {
			return nil, errors.New("wrong user or password")
		}
		l, _, ok := b.restProxyListener()
		if !ok {
			return nil, errNoRestProxyListener
		}
		enabled := b.cfg.SASL.MechanismsFor(l.Name)
		candidates := []string{config.MechScramSHA512, config.MechScramSHA256}
		if sasl.VerifyPlain(b.cfg.SASL.PlainUsers[l.Name], user, password) {
			candidates = []string{config.MechPlain}
		}
		for _, m := range candidates {
			if !slices.Contains(enabled, m) {
				continue
			}
			if m != config.MechPlain {
				if _, ok := scram(user, m); !ok {
					continue
				}
			}
			return saslMechanism(m, user, password)
		}
		return nil, errRestProxyLoginMechanism
	}
}

// RestProxyAddrs returns the bound REST proxy listener addresses (useful
// with port 0); none when it is disabled.
func (b *Broker) RestProxyAddrs() []net.Addr {
	if b.restHTTP == nil {
		return nil
	}
	return b.restHTTP.Addrs()
}

// restProxyURL is the base URL of the proxy's first listener (a
// wildcard bind as localhost) and whether it asks for a login; "" when
// the proxy is off. The console shows it in a curl line.
func (b *Broker) restProxyURL() (string, bool) {
	addrs := b.RestProxyAddrs()
	if len(addrs) == 0 {
		return "", false
	}
	host, port := "localhost", ""
	if tcp, ok := addrs[0].(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
		if !tcp.IP.IsUnspecified() {
			host = tcp.IP.String()
		}
	}
	scheme := "http://"
	if b.cfg.RestProxy.Listeners[0].TLS {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port), b.cfg.RestProxy.Authentication == config.HTTPAuthBasic
}

// closeRestProxy closes the consumer instances and Kafka clients of the
// proxy, then its listeners, before the Kafka listeners close.
func (b *Broker) closeRestProxy() {
	if b.restProxy != nil {
		b.restProxy.Close()
	}
	if b.restHTTP != nil {
		b.restHTTP.Close()
	}
}
