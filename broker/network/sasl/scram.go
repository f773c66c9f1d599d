package sasl

// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's
// ScramSaslServer runs them:
//
//	client-first  n,[a=authzid],n=user,r=cnonce[,ext=value...]
//	server-first  r=cnonce+snonce,s=base64(salt),i=iterations
//	client-final  c=base64(gs2 header),r=cnonce+snonce[,ext],p=base64(proof)
//	server-final  v=base64(ServerSignature)
//
// Like Kafka: only the gs2 flag "n" (no channel binding), the reserved m=
// attribute and unknown extensions are ignored, the channel-binding value is
// not checked, an unknown user fails at the first message, and passwords are
// not SASLprep-normalised (Kafka uses their UTF-8 bytes). Delegation tokens
// (the tokenauth=true extension) are not supported.
//
// The client-final nonce must be the server-first one, with one leniency:
// librdkafka before 2.6.1 (librdkafka#4895) sends its client nonce again in
// front of it. Kafka 3.8.1–3.9 accepted that (a suffix check after
// CVE-2024-56128), Kafka 4 does not; kbroker accepts exactly that one form,
// so that kcat and the confluent clients of Debian/Ubuntu releases work.

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/kbroker/kbroker/broker/config"
)

// ScramMech is one SCRAM mechanism: its name, Kafka's number for it in
// Describe/AlterUserScramCredentials, and its hash.
type ScramMech struct {
	Name string
	Kind int8
	hash func() hash.Hash
}

var ScramMechs = []ScramMech{
	{config.MechScramSHA256, 1, sha256.New},
	{config.MechScramSHA512, 2, sha512.New},
}

// scramMechByName returns the mechanism called name, or nil.
func scramMechByName(name string) *ScramMech {
	for i := range ScramMechs {
		if ScramMechs[i].Name == name {
			return &ScramMechs[i]
		}
	}
	return nil
}

// ScramMechByKind returns the mechanism numbered kind, or nil.
func ScramMechByKind(kind int8) *ScramMech {
	for i := range ScramMechs {
		if ScramMechs[i].Kind == kind {
			return &ScramMechs[i]
		}
	}
	return nil
}

func (m *ScramMech) hmac(key []byte, msg string) []byte {
	h := hmac.New(m.hash, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

func (m *ScramMech) sum(b []byte) []byte {
	h := m.hash()
	h.Write(b)
	return h.Sum(nil)
}

// Credential is a user's SCRAM credential as the server keeps it (RFC 5802):
// never the password, only the salt, iteration count, StoredKey and
// ServerKey. It has the fields of controller.ScramCredential, which stores
// it, so the two convert into each other; this package knows no store.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// CredentialFromSalted derives what the server keeps from a salted password:
// StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
// ServerKey = HMAC(SaltedPassword, "Server Key").
func (m *ScramMech) CredentialFromSalted(salt, salted []byte, iterations int32) Credential {
	return Credential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.sum(m.hmac(salted, "Client Key")),
		ServerKey:  m.hmac(salted, "Server Key"),
		Iterations: iterations,
	}
}

// saltedPassword is Hi(password, salt, i) of RFC 5802: PBKDF2 with HMAC-H.
func (m *ScramMech) saltedPassword(password string, salt []byte, iterations int32) ([]byte, error) {
	return pbkdf2.Key(m.hash, password, salt, int(iterations), m.hash().Size())
}

// BootstrapCredential computes the stored credential of a
// sasl.scram.bootstrap.users entry; a missing salt is random.
func BootstrapCredential(u config.ScramBootstrapUser) (Credential, error) {
	m := scramMechByName(u.Mechanism)
	if m == nil {
		return Credential{}, fmt.Errorf("unknown SCRAM mechanism %q", u.Mechanism)
	}
	salt := u.Salt
	if salt == nil {
		salt = make([]byte, 24)
		_, _ = rand.Read(salt)
	}
	salted := u.SaltedPassword
	if u.Password != "" || salted == nil {
		var err error
		if salted, err = m.saltedPassword(u.Password, salt, u.Iterations); err != nil {
			return Credential{}, err
		}
	}
	return m.CredentialFromSalted(salt, salted, u.Iterations), nil
}

// saslClientError is an authentication failure whose message Kafka sends to
// the client as is (its SaslAuthenticationException). Every other failure
// is answered with the generic "invalid credentials" message, so that
// nothing about the user's existence leaks.
type saslClientError struct{ msg string }

func (e *saslClientError) Error() string { return e.msg }

// scramServer is the server side of one SCRAM exchange. It does no I/O:
// step takes each client message and returns the server's answer.
type scramServer struct {
	mech   *ScramMech
	lookup func(user string) (Credential, bool)
	// nonce returns the server's part of the nonce.
	nonce func() string

	step2           bool
	clientNonce     string
	user            string
	cred            Credential
	clientFirstBare string
	serverFirst     string
	fullNonce       string
}

func newScramServer(m *ScramMech, lookup func(string) (Credential, bool)) *scramServer {
	return &scramServer{mech: m, lookup: lookup, nonce: randomNonce}
}

// randomNonce is 24 random bytes in base64 (printable, no commas).
func randomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// step handles the next client message. done is true after the client proof
// verified; then the principal is the user.
func (s *scramServer) step(in []byte) (out []byte, done bool, err error) {
	if !s.step2 {
		out, err = s.clientFirst(string(in))
		s.step2 = err == nil
		return out, false, err
	}
	out, err = s.clientFinal(string(in))
	return out, err == nil, err
}

// principal is the authenticated user name.
func (s *scramServer) principal() string { return s.user }

func (s *scramServer) clientFirst(msg string) ([]byte, error) {
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return nil, fmt.Errorf("invalid SCRAM client first message: gs2 header is not \"n,\"")
	}
	authzPart, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, errors.New("invalid SCRAM client first message format")
	}
	var authzid string
	if authzPart != "" {
		a, ok := strings.CutPrefix(authzPart, "a=")
		if !ok {
			return nil, errors.New("invalid SCRAM client first message: bad authzid")
		}
		var err error
		if authzid, err = scramUnescapeName(a); err != nil {
			return nil, err
		}
	}
	attrs := strings.Split(bare, ",")
	if len(attrs) > 0 && strings.HasPrefix(attrs[0], "m=") {
		attrs = attrs[1:]
	}
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, errors.New("invalid SCRAM client first message format")
	}
	user, err := scramUnescapeName(attrs[0][2:])
	if err != nil {
		return nil, err
	}
	cnonce := attrs[1][2:]
	if !scramPrintable(cnonce) {
		return nil, errors.New("invalid SCRAM client nonce")
	}
	for _, ext := range attrs[2:] {
		k, v, ok := strings.Cut(ext, "=")
		if !ok || k == "" {
			return nil, errors.New("invalid SCRAM extension")
		}
		if k == "tokenauth" && strings.EqualFold(v, "true") {
			return nil, errors.New("delegation token authentication is not supported")
		}
	}
	cred, ok := s.lookup(user)
	if !ok {
		return nil, fmt.Errorf("no %s credential for user %q", s.mech.Name, user)
	}
	if authzid != "" && authzid != user {
		return nil, &saslClientError{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	if cred.Iterations < config.ScramMinIterations {
		return nil, fmt.Errorf("iterations %d is less than the minimum %d for %s", cred.Iterations, config.ScramMinIterations, s.mech.Name)
	}
	s.user, s.cred, s.clientFirstBare, s.clientNonce = user, cred, bare, cnonce
	s.fullNonce = cnonce + s.nonce()
	s.serverFirst = "r=" + s.fullNonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	return []byte(s.serverFirst), nil
}

func (s *scramServer) clientFinal(msg string) ([]byte, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 || !strings.HasPrefix(msg, "c=") {
		return nil, errors.New("invalid SCRAM client final message format")
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[1], "r=") {
		return nil, errors.New("invalid SCRAM client final message format")
	}
	if _, err := base64.StdEncoding.DecodeString(attrs[0][2:]); err != nil {
		return nil, errors.New("invalid SCRAM channel binding")
	}
	if n := attrs[1][2:]; n != s.fullNonce && n != s.clientNonce+s.fullNonce {
		return nil, errors.New("invalid client nonce in the final client message")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return nil, errors.New("invalid SCRAM client proof")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	clientSig := s.mech.hmac(s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ clientSig[j]
	}
	if subtle.ConstantTimeCompare(s.mech.sum(clientKey), s.cred.StoredKey) != 1 {
		return nil, errors.New("invalid client credentials")
	}
	serverSig := s.mech.hmac(s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}

// scramUnescapeName decodes a saslname: "=2C" is ',' and "=3D" is '='; any
// other '=' is invalid.
func scramUnescapeName(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty SCRAM user name")
	}
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", errors.New("invalid escape in SCRAM user name")
		}
		i += 2
	}
	return b.String(), nil
}

// scramPrintable reports whether s is a non-empty run of printable ASCII
// without commas, as RFC 5802 requires of a nonce.
func scramPrintable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}
