package httpserver

// HTTP Basic authentication (http.authentication=basic) against the
// broker's SASL users; the broker hands the check in (sasl.Passwords). The
// HTTP listener has no users of its own: whoever may log in to a Kafka
// listener with a password may log in here with the same one, so an
// operator manages one set of credentials (kafka-configs --alter
// --add-config 'SCRAM-SHA-256=[password=…]', or the PlainLoginModule JAAS
// config).

import (
	"log/slog"
	"net/http"
	"time"
)

// challenge asks for Basic credentials; the realm is what a browser shows
// in its login prompt.
const challenge = `Basic realm="kbroker"`

// BasicAuth is the Basic login of every path but the probes.
type BasicAuth struct {
	// Check reports whether password is user's (never called with an
	// empty user or password).
	Check func(user, password string) bool
	// FailureDelay holds a 401 for a wrong login back that long
	// (connection.failed.authentication.delay.ms), as a failed SASL
	// authentication is, so guessing goes slowly.
	FailureDelay time.Duration
}

// wrap serves next to requests with a valid login and answers the others
// 401 with the Basic challenge; a wrong login is logged (the user and the
// client, never the password) and answered after the failure delay.
func (a *BasicAuth) wrap(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, given := r.BasicAuth()
		if given && user != "" && password != "" && a.Check(user, password) {
			next.ServeHTTP(w, r)
			return
		}
		if given {
			log.Info("http authentication failed", "client", r.RemoteAddr, "user", user, "path", r.URL.Path)
			if a.FailureDelay > 0 {
				t := time.NewTimer(a.FailureDelay)
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
