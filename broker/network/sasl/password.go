package sasl

// Checking a password outside a SASL exchange, for logins that carry the
// password itself (the HTTP listener's Basic authentication): against PLAIN's
// configured users, and against a stored SCRAM credential by deriving what
// the server keeps from the password and comparing.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"sync"

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

// maxCachedLogins bounds the cache of verified SCRAM logins; when full it is
// emptied, which costs each user one more key derivation.
const maxCachedLogins = 1024

// Passwords checks a user's password against PLAIN's users and the SCRAM
// credentials of the metadata store, for logins that carry the password
// (the HTTP listener's Basic authentication). It never logs or keeps a
// password: a verified SCRAM login is remembered as an HMAC of the password
// under a key made at start-up, so that a scraper or the console's polling
// does not pay the thousands of hash rounds of a SCRAM derivation at every
// request.
type Passwords struct {
	// plain are PLAIN's users and passwords by Kafka listener
	// (config.SASL.PlainUsers); a password of any listener is accepted.
	plain map[string]map[string]string
	// scram looks up a user's SCRAM credential for a mechanism; nil: none.
	scram func(user, mechanism string) (Credential, bool)
	// derive admits one SCRAM key derivation at a time: the server pays
	// the hash rounds of every guess (in a SCRAM exchange the client
	// does), so a flood of wrong logins is held to one core and the Kafka
	// traffic keeps the others.
	derive chan struct{}

	macKey [32]byte
	mu     struct {
		sync.Mutex
		// verified maps a user to the last SCRAM login verified for it.
		// Invariant: an entry is honoured only while the store still holds
		// a credential with the same mechanism and StoredKey, so a changed
		// or deleted credential ends it.
		verified map[string]verifiedLogin
	}
}

type verifiedLogin struct {
	mechanism string
	storedKey []byte
	mac       []byte // HMAC-SHA256(macKey, password)
}

// NewPasswords returns the checker of the broker's users: plain is
// config.SASL.PlainUsers, scram looks a SCRAM credential up (ok false: none,
// or not available yet); nil: no SCRAM users.
func NewPasswords(plain map[string]map[string]string, scram func(user, mechanism string) (Credential, bool)) *Passwords {
	a := &Passwords{plain: plain, scram: scram, derive: make(chan struct{}, 1)}
	_, _ = rand.Read(a.macKey[:])
	a.mu.verified = map[string]verifiedLogin{}
	return a
}

// Check reports whether password is user's: a PLAIN password of any
// listener, or the password of one of the user's SCRAM credentials.
func (a *Passwords) Check(user, password string) bool {
	if user == "" || password == "" {
		return false
	}
	ok := false
	for _, users := range a.plain {
		// Every listener is compared, so timing does not tell which matched.
		ok = VerifyPlain(users, user, password) || ok
	}
	if ok || a.scram == nil {
		return ok
	}
	mac := hmac.New(sha256.New, a.macKey[:])
	mac.Write([]byte(password))
	sum := mac.Sum(nil)
	for i := range ScramMechs {
		m := &ScramMechs[i]
		cred, found := a.scram(user, m.Name)
		if !found {
			continue
		}
		if a.cached(user, m.Name, cred.StoredKey, sum) {
			return true
		}
		a.derive <- struct{}{}
		ok := m.VerifyPassword(password, cred)
		<-a.derive
		if ok {
			a.remember(user, verifiedLogin{mechanism: m.Name, storedKey: bytes.Clone(cred.StoredKey), mac: sum})
			return true
		}
	}
	return false
}

func (a *Passwords) cached(user, mechanism string, storedKey, mac []byte) bool {
	a.mu.Lock()
	v, ok := a.mu.verified[user]
	a.mu.Unlock()
	return ok && v.mechanism == mechanism && bytes.Equal(v.storedKey, storedKey) && hmac.Equal(v.mac, mac)
}

func (a *Passwords) remember(user string, v verifiedLogin) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.mu.verified) >= maxCachedLogins {
		clear(a.mu.verified)
	}
	a.mu.verified[user] = v
}
