package httpserver

// HTTP Basic authentication (http.authentication=basic) against the
// broker's SASL users. The HTTP listener has no users of its own: whoever
// may log in to a Kafka listener with a password may log in here with the
// same one, so an operator manages one set of credentials
// (kafka-configs --alter --add-config 'SCRAM-SHA-256=[password=…]' or the
// PlainLoginModule JAAS config).

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/network/sasl"
)

// challenge asks for Basic credentials; the realm is what a browser shows
// in its login prompt.
const challenge = `Basic realm="kbroker"`

// maxCachedLogins bounds the cache of verified SCRAM logins; when full it is
// emptied, which costs each user one more key derivation.
const maxCachedLogins = 1024

// BasicAuth checks HTTP Basic credentials against PLAIN's users and the
// SCRAM credentials of the metadata store. It never logs or keeps a
// password: a verified SCRAM login is remembered as an HMAC of the password
// under a key made at start-up, so that a scraper or the console's polling
// does not pay the thousands of hash rounds of a SCRAM derivation at every
// request.
type BasicAuth struct {
	// plain are PLAIN's users and passwords by Kafka listener
	// (config.SASL.PlainUsers); a password of any listener is accepted.
	plain map[string]map[string]string
	// scram looks up a user's SCRAM credential for a mechanism; nil: none.
	scram func(user, mechanism string) (sasl.Credential, bool)
	// failureDelay holds a 401 for a wrong password back that long
	// (connection.failed.authentication.delay.ms), as a failed SASL
	// authentication is, so guessing goes slowly.
	failureDelay time.Duration

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

// NewBasicAuth returns the checker of the broker's users: plain is
// config.SASL.PlainUsers, scram looks a SCRAM credential up (ok false: none,
// or not available yet).
func NewBasicAuth(plain map[string]map[string]string, scram func(user, mechanism string) (sasl.Credential, bool), failureDelay time.Duration) *BasicAuth {
	a := &BasicAuth{plain: plain, scram: scram, failureDelay: failureDelay}
	_, _ = rand.Read(a.macKey[:])
	a.mu.verified = map[string]verifiedLogin{}
	return a
}

// Check reports whether password is user's: a PLAIN password of any
// listener, or the password of one of the user's SCRAM credentials.
func (a *BasicAuth) Check(user, password string) bool {
	if user == "" || password == "" {
		return false
	}
	ok := false
	for _, users := range a.plain {
		// Every listener is compared, so timing does not tell which matched.
		ok = sasl.VerifyPlain(users, user, password) || ok
	}
	if ok || a.scram == nil {
		return ok
	}
	mac := hmac.New(sha256.New, a.macKey[:])
	mac.Write([]byte(password))
	sum := mac.Sum(nil)
	for i := range sasl.ScramMechs {
		m := &sasl.ScramMechs[i]
		cred, found := a.scram(user, m.Name)
		if !found {
			continue
		}
		if a.cached(user, m.Name, cred.StoredKey, sum) {
			return true
		}
		if m.VerifyPassword(password, cred) {
			a.remember(user, verifiedLogin{mechanism: m.Name, storedKey: bytes.Clone(cred.StoredKey), mac: sum})
			return true
		}
	}
	return false
}

func (a *BasicAuth) cached(user, mechanism string, storedKey, mac []byte) bool {
	a.mu.Lock()
	v, ok := a.mu.verified[user]
	a.mu.Unlock()
	return ok && v.mechanism == mechanism && bytes.Equal(v.storedKey, storedKey) && hmac.Equal(v.mac, mac)
}

func (a *BasicAuth) remember(user string, v verifiedLogin) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.mu.verified) >= maxCachedLogins {
		clear(a.mu.verified)
	}
	a.mu.verified[user] = v
}

// wrap serves next to requests with a valid login and answers the others
// 401 with the Basic challenge; a wrong login is logged (the user and the
// client, never the password) and answered after the failure delay.
func (a *BasicAuth) wrap(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, given := r.BasicAuth()
		if given && a.Check(user, password) {
			next.ServeHTTP(w, r)
			return
		}
		if given {
			log.Info("http authentication failed", "client", r.RemoteAddr, "user", user, "path", r.URL.Path)
			if a.failureDelay > 0 {
				t := time.NewTimer(a.failureDelay)
				select {
				case <-t.C:
				case <-r.Context().Done(): // client gone or server closing
				}
				t.Stop()
			}
		}
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, "401 Unauthorized: log in with a SASL user of this broker", http.StatusUnauthorized)
	})
}
