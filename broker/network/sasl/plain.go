package sasl

// SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer runs it: one message,
// authzid NUL authcid NUL passwd, checked against the user_NAME="password"
// options of the listener's PlainLoginModule JAAS config. A wrong user or
// password, or an authzid other than the user, is answered with Kafka's
// message for it.

import (
	"crypto/subtle"
	"errors"
	"strings"
)

// plainMessage splits a PLAIN message into its three fields the way Kafka
// does: fields missing at the end are empty, anything after a third NUL is
// dropped.
func plainMessage(msg []byte) (authzid, user, password string) {
	var f [3]string
	rest := string(msg)
	for i := range f {
		j := strings.IndexByte(rest, 0)
		if j < 0 {
			f[i] = rest
			break
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	return f[0], f[1], f[2]
}

// plainAuthenticate checks one PLAIN message against users and returns the
// authenticated user.
func plainAuthenticate(msg []byte, users map[string]string) (string, error) {
	authzid, user, password := plainMessage(msg)
	if user == "" {
		return "", errors.New("Authentication failed: username not specified")
	}
	if password == "" {
		return "", errors.New("Authentication failed: password not specified")
	}
	want, ok := users[user]
	// Compare even for an unknown user, so timing says little about it.
	match := subtle.ConstantTimeCompare([]byte(password), []byte(want)) == 1
	if !ok || !match {
		return "", &saslClientError{"Authentication failed: Invalid username or password"}
	}
	if authzid != "" && authzid != user {
		return "", &saslClientError{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	return user, nil
}
