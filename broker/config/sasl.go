package config

// Security configuration: listener security protocols and SASL. The Kafka
// property names are Kafka's; the defaults are Kafka's except
// sasl.enabled.mechanisms (Kafka: GSSAPI, which kbroker does not have).
//
//	listener.security.protocol.map  NAME:PROTOCOL,...  (SSL and SASL_SSL: see tls.go)
//	sasl.enabled.mechanisms         PLAIN,SCRAM-SHA-256,SCRAM-SHA-512 by default
//	listener.name.<l>.sasl.enabled.mechanisms          per-listener override
//	listener.name.<l>.plain.sasl.jaas.config           PLAIN users of listener <l>
//	sasl.jaas.config                                   PLAIN users of every SASL listener without the above
//	listener.name.<l>.scram-sha-256.sasl.jaas.config   accepted; SCRAM users live in the metadata store
//	inter.broker.listener.name      the listener brokers use among themselves (interbroker.go)
//	sasl.scram.bootstrap.users      kbroker's `kafka-storage format --add-scram`
//
// sasl.jaas.config and sasl.scram.bootstrap.users hold passwords: they are
// kept out of the props table so that DescribeConfigs never returns them.

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

const (
	defaultSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL"
	defaultSASLMechanisms      = MechPlain + "," + MechScramSHA256 + "," + MechScramSHA512

	protoPlaintext     = "PLAINTEXT"
	ProtoSASLPlaintext = "SASL_PLAINTEXT"

	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"

	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

	keyJAAS           = "sasl.jaas.config"
	KeyScramBootstrap = "sasl.scram.bootstrap.users"
	listenerKeyPrefix = "listener.name."

	// ScramMinIterations and scramMaxIterations are Kafka's bounds
	// (ScramMechanism.minIterations, ScramControlManager.MAX_ITERATIONS).
	ScramMinIterations     = 4096
	ScramMaxIterations     = 16384
	scramDefaultIterations = 4096
)

// SASLConfig is the SASL part of Config.
type SASLConfig struct {
	// EnabledMechanisms is sasl.enabled.mechanisms.
	EnabledMechanisms []string
	// ListenerMechanisms overrides EnabledMechanisms per listener name
	// (listener.name.<l>.sasl.enabled.mechanisms).
	ListenerMechanisms map[string][]string
	// PlainUsers maps a listener name to PLAIN's users and passwords, the
	// user_NAME="password" options of its PlainLoginModule JAAS config.
	PlainUsers map[string]map[string]string
	// BootstrapScram are the credentials of sasl.scram.bootstrap.users,
	// stored at start-up for users that have none for that mechanism.
	BootstrapScram []ScramBootstrapUser
	// OAuth is OAUTHBEARER's validators (oauth.go).
	OAuth OAuthConfig
	// FailedAuthenticationDelayMs is connection.failed.authentication.delay.ms.
	FailedAuthenticationDelayMs int64
	// ConnectionsMaxReauthMs is connections.max.reauth.ms (KIP-368; 0: none).
	ConnectionsMaxReauthMs int64
}

// ScramBootstrapUser is one entry of sasl.scram.bootstrap.users, in the
// syntax of `kafka-storage format --add-scram`:
// SCRAM-SHA-256=[name=alice,password=alice-secret], optionally with
// iterations=N, salt=BASE64 and saltedpassword=BASE64 (instead of password).
type ScramBootstrapUser struct {
	Mechanism      string
	Name           string
	Password       string
	Salt           []byte
	SaltedPassword []byte
	Iterations     int32
}

// MechanismsFor is the mechanisms enabled on listener name.
func (c SASLConfig) MechanismsFor(name string) []string {
	if m, ok := c.ListenerMechanisms[name]; ok {
		return m
	}
	return c.EnabledMechanisms
}

func parseSecurityProtocolMap(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range SplitList(v) {
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %q is not LISTENER_NAME:SECURITY_PROTOCOL", e)
		}
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return nil, fmt.Errorf("unknown security protocol %q for listener %s", proto, name)
		}
		out[name] = proto
	}
	return out, nil
}

func parseSASLMechanisms(v string) ([]string, error) {
	var out []string
	for _, m := range SplitList(v) {
		switch m {
		case MechPlain, MechScramSHA256, MechScramSHA512, MechOAuthBearer:
			out = append(out, m)
		case "GSSAPI":
			return nil, fmt.Errorf("SASL mechanism %s is not supported by kbroker (supported: %s)", m, defaultSASLMechanisms)
		default:
			return nil, fmt.Errorf("unknown SASL mechanism %q (supported: %s)", m, defaultSASLMechanisms)
		}
	}
	return out, nil
}

// isSecurityKey reports whether k is a security property outside the props
// table: a secret or a listener.name.<l>. property.
func isSecurityKey(k string) bool {
	if k == keyJAAS || k == KeyScramBootstrap || k == keyInterBrokerMechanism || k == KeyConsoleSASLPassword || isSSLKey(k) {
		return true
	}
	_, rest, ok := listenerKey(k)
	return ok && (rest == "sasl.enabled.mechanisms" || strings.HasSuffix(rest, ".sasl.jaas.config") || isOAuthListenerKey(rest))
}

// listenerKey splits listener.name.<l>.<rest> into the upper-cased listener
// name and rest. Listener names contain no dots.
func listenerKey(k string) (name, rest string, ok bool) {
	if !strings.HasPrefix(k, listenerKeyPrefix) {
		return "", "", false
	}
	name, rest, ok = strings.Cut(k[len(listenerKeyPrefix):], ".")
	return strings.ToUpper(name), rest, ok && name != ""
}

// resolveSecurity gives each listener its security protocol, checks the
// listener names, and reads the SASL and TLS properties of p.
func (c *Config) resolveSecurity(p map[string]string) error {
	seen := map[string]bool{}
	for i, l := range c.Listeners {
		proto, ok := c.SecurityProtocolMap[l.Name]
		if !ok {
			return fmt.Errorf("config listener.security.protocol.map: no security protocol for listener %s", l.Name)
		}
		if seen[l.Name] {
			return fmt.Errorf("config listeners: listener name %s is used twice", l.Name)
		}
		seen[l.Name] = true
		c.Listeners[i].SecurityProtocol = proto
	}
	adv := make([]Listener, len(c.AdvertisedListeners))
	for i, l := range c.AdvertisedListeners {
		if !seen[l.Name] {
			return fmt.Errorf("config advertised.listeners: listener %s is not in listeners", l.Name)
		}
		l.SecurityProtocol = c.SecurityProtocolMap[l.Name]
		adv[i] = l
	}
	c.AdvertisedListeners = adv
	if n := c.InterBrokerListenerName; n != "" && !seen[n] {
		return fmt.Errorf("config inter.broker.listener.name: listener %s is not in listeners", n)
	}

	jaasByListener := map[string]string{}
	for k, v := range p {
		name, rest, ok := listenerKey(k)
		if !ok {
			continue
		}
		switch {
		case rest == "sasl.enabled.mechanisms":
			m, err := parseSASLMechanisms(v)
			if err != nil {
				return fmt.Errorf("config %s: %w", k, err)
			}
			if c.SASL.ListenerMechanisms == nil {
				c.SASL.ListenerMechanisms = map[string][]string{}
			}
			c.SASL.ListenerMechanisms[name] = m
		case strings.HasSuffix(rest, ".sasl.jaas.config"):
			mech := strings.ToUpper(strings.TrimSuffix(rest, ".sasl.jaas.config"))
			if _, err := parseSASLMechanisms(mech); err != nil {
				return fmt.Errorf("config %s: %w", k, err)
			}
			jm, err := parseJAAS(v)
			if err != nil {
				return fmt.Errorf("config %s: %w", k, err)
			}
			if mech == MechPlain {
				if jm.Class != plainLoginModule {
					return fmt.Errorf("config %s: login module %s is not %s", k, jm.Class, plainLoginModule)
				}
				jaasByListener[name] = v
			}
		}
	}
	var global map[string]string
	if v, ok := p[keyJAAS]; ok {
		jm, err := parseJAAS(v)
		if err != nil {
			return fmt.Errorf("config %s: %w", keyJAAS, err)
		}
		if jm.Class == plainLoginModule {
			global = jm.plainUsers()
		}
	}
	for _, l := range c.Listeners {
		if !l.IsSASL() {
			continue
		}
		users := global
		if v, ok := jaasByListener[l.Name]; ok {
			jm, _ := parseJAAS(v) // parsed above
			users = jm.plainUsers()
		}
		if users != nil {
			if c.SASL.PlainUsers == nil {
				c.SASL.PlainUsers = map[string]map[string]string{}
			}
			c.SASL.PlainUsers[l.Name] = users
		}
	}
	if v, ok := p[KeyScramBootstrap]; ok {
		users, err := parseScramBootstrap(v)
		if err != nil {
			return fmt.Errorf("config %s: %w", KeyScramBootstrap, err)
		}
		c.SASL.BootstrapScram = users
	}
	if err := c.resolveOAuth(p); err != nil {
		return err
	}
	if err := c.resolveTLS(p); err != nil {
		return err
	}
	return c.resolveInterBroker(p)
}

// jaasModule is the one login module of a sasl.jaas.config value:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";
type jaasModule struct {
	Class   string
	Flag    string
	Options map[string]string
}

// plainUsers returns the user_NAME="password" options of a PlainLoginModule.
func (m jaasModule) plainUsers() map[string]string {
	users := map[string]string{}
	for k, v := range m.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users
}

// parseJAAS parses a JAAS configuration holding exactly one login module, as
// Kafka requires of sasl.jaas.config: a class name, a control flag
// (required, requisite, sufficient, optional), key=value options whose values
// are bare words or double-quoted strings with backslash escapes, and ';'.
func parseJAAS(s string) (jaasModule, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return jaasModule{}, err
	}
	var mods []jaasModule
	for len(toks) > 0 {
		if len(toks) < 2 || toks[0].kind != tokWord || toks[1].kind != tokWord {
			return jaasModule{}, fmt.Errorf("JAAS config: expected a login module class and a control flag")
		}
		m := jaasModule{Class: toks[0].text, Flag: strings.ToLower(toks[1].text), Options: map[string]string{}}
		switch m.Flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			return jaasModule{}, fmt.Errorf("JAAS config: invalid control flag %q for %s", toks[1].text, m.Class)
		}
		toks = toks[2:]
		for {
			if len(toks) == 0 {
				return jaasModule{}, fmt.Errorf("JAAS config: login module %s does not end with ';'", m.Class)
			}
			if toks[0].kind == tokSemi {
				toks = toks[1:]
				break
			}
			if len(toks) < 3 || toks[0].kind != tokWord || toks[1].kind != tokEquals || (toks[2].kind != tokWord && toks[2].kind != tokQuoted) {
				return jaasModule{}, fmt.Errorf("JAAS config: expected key=value in login module %s", m.Class)
			}
			m.Options[toks[0].text] = toks[2].text
			toks = toks[3:]
		}
		mods = append(mods, m)
	}
	if len(mods) != 1 {
		return jaasModule{}, fmt.Errorf("JAAS config holds %d login modules, should be 1", len(mods))
	}
	return mods[0], nil
}

type jaasTokKind int

const (
	tokWord jaasTokKind = iota
	tokQuoted
	tokEquals
	tokSemi
)

type jaasTok struct {
	kind jaasTokKind
	text string
}

func jaasTokens(s string) ([]jaasTok, error) {
	var out []jaasTok
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case unicode.IsSpace(rune(ch)):
			i++
		case ch == '=':
			out = append(out, jaasTok{kind: tokEquals})
			i++
		case ch == ';':
			out = append(out, jaasTok{kind: tokSemi})
			i++
		case ch == '"':
			var b strings.Builder
			i++
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("JAAS config: unterminated quoted string")
				}
				c := s[i]
				if c == '"' {
					i++
					break
				}
				if c == '\\' && i+1 < len(s) {
					i++
					switch s[i] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					default:
						b.WriteByte(s[i])
					}
					i++
					continue
				}
				b.WriteByte(c)
				i++
			}
			out = append(out, jaasTok{kind: tokQuoted, text: b.String()})
		default:
			j := i
			for j < len(s) && !unicode.IsSpace(rune(s[j])) && s[j] != '=' && s[j] != ';' && s[j] != '"' {
				j++
			}
			out = append(out, jaasTok{kind: tokWord, text: s[i:j]})
			i = j
		}
	}
	return out, nil
}

// parseScramBootstrap parses sasl.scram.bootstrap.users: entries in the
// syntax of kafka-storage's --add-scram, separated by commas, semicolons or
// spaces outside the brackets:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret],SCRAM-SHA-512=[name=bob,password=b,iterations=8192]
func parseScramBootstrap(v string) ([]ScramBootstrapUser, error) {
	var entries []string
	depth, start := 0, -1
	for i := 0; i < len(v); i++ {
		switch ch := v[i]; {
		case ch == '[':
			depth++
		case ch == ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ']' at %d", i)
			}
		case depth == 0 && (ch == ',' || ch == ';' || unicode.IsSpace(rune(ch))):
			if start >= 0 {
				entries = append(entries, v[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced '[' in %q", v)
	}
	if start >= 0 {
		entries = append(entries, v[start:])
	}
	var out []ScramBootstrapUser
	for _, e := range entries {
		u, err := parseAddScram(e)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// parseAddScram parses one MECHANISM=[key=value,...] entry.
func parseAddScram(e string) (ScramBootstrapUser, error) {
	mech, body, ok := strings.Cut(e, "=")
	if !ok {
		return ScramBootstrapUser{}, fmt.Errorf("no '=' in SCRAM entry %q", e)
	}
	if mech != MechScramSHA256 && mech != MechScramSHA512 {
		return ScramBootstrapUser{}, fmt.Errorf("SCRAM mechanism %q is not supported (%s, %s)", mech, MechScramSHA256, MechScramSHA512)
	}
	if !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		return ScramBootstrapUser{}, fmt.Errorf("SCRAM entry %q: expected %s=[name=...,password=...]", e, mech)
	}
	u := ScramBootstrapUser{Mechanism: mech, Iterations: scramDefaultIterations}
	var havePassword, haveSalted, haveName bool
	for _, kv := range strings.Split(body[1:len(body)-1], ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return ScramBootstrapUser{}, fmt.Errorf("SCRAM entry %q: no '=' in %q", e, kv)
		}
		k = strings.TrimSpace(k)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		var err error
		switch k {
		case "name":
			u.Name, haveName = val, true
		case "password":
			u.Password, havePassword = val, true
		case "salt":
			u.Salt, err = base64.StdEncoding.DecodeString(val)
		case "saltedpassword":
			u.SaltedPassword, err = base64.StdEncoding.DecodeString(val)
			haveSalted = true
		case "iterations":
			var n int64
			n, err = strconv.ParseInt(val, 10, 32)
			u.Iterations = int32(n)
		default:
			return ScramBootstrapUser{}, fmt.Errorf("SCRAM entry %q: unknown key %q", e, k)
		}
		if err != nil {
			return ScramBootstrapUser{}, fmt.Errorf("SCRAM entry %q: %s: %w", e, k, err)
		}
	}
	switch {
	case !haveName || u.Name == "":
		return ScramBootstrapUser{}, fmt.Errorf("SCRAM entry %q: name is required", e)
	case !havePassword && !haveSalted:
		return ScramBootstrapUser{}, fmt.Errorf("SCRAM entry %q: password or saltedpassword is required", e)
	case haveSalted && u.Salt == nil:
		return ScramBootstrapUser{}, fmt.Errorf("SCRAM entry %q: saltedpassword needs salt", e)
	case u.Iterations < ScramMinIterations || u.Iterations > ScramMaxIterations:
		return ScramBootstrapUser{}, fmt.Errorf("SCRAM entry %q: iterations must be in [%d, %d]", e, ScramMinIterations, ScramMaxIterations)
	}
	return u, nil
}
