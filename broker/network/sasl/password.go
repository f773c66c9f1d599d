package sasl

// Checking a password outside a SASL exchange, for logins that carry the
// password itself (the HTTP listener's Basic authentication): against PLAIN's
// configured users, and against a stored SCRAM credential by deriving what
// the server keeps from the password and comparing.

import (
	"crypto/subtle"

	"github.com/kbroker/kbroker/broker/config"
)

// VerifyPassword reports whether password is the one c was made from:
// SaltedPassword = Hi(password, salt, i), ClientKey = HMAC(SaltedPassword,
// "Client Key"), and H(ClientKey) must be c's StoredKey (RFC 5802). It
// costs c.Iterations rounds of the hash. A credential with fewer iterations
// than Kafka's minimum is refused, as the SCRAM exchange refuses it.
func (m *ScramMech) VerifyPassword(password string, c Credential) bool {
	if c.Iterations < config.ScramMinIterations || len(c.StoredKey) == 0 {
		return false
	}
	salted, err := m.saltedPassword(password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	stored := m.sum(m.hmac(salted, "Client Key"))
	return subtle.ConstantTimeCompare(stored, c.StoredKey) == 1
}

// VerifyPlain reports whether users (PLAIN's user_NAME="password" options)
// give user this password, in time independent of the password.
func VerifyPlain(users map[string]string, user, password string) bool {
	want, ok := users[user]
	match := subtle.ConstantTimeCompare([]byte(password), []byte(want)) == 1
	return ok && match && password != ""
}
