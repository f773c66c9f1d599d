package sasl

// KIP-368 re-authentication, as Kafka's SaslServerAuthenticator runs it.
// When a session has a lifetime (connections.max.reauth.ms, or the expiry
// of an OAUTHBEARER token, whichever comes first), the final
// SaslAuthenticate response (v1+) carries session_lifetime_ms, and the
// client must authenticate again on the same connection before it ends:
// a SaslHandshake with the same mechanism, then SaslAuthenticate, ending
// with the same principal. A client that does not (and then sends any
// other request) has its connection closed. Clients that authenticated
// with SaslAuthenticate v0 know nothing of this and get no lifetime.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// session is the re-authentication state of an Authenticator.
type session struct {
	maxReauth time.Duration
	now       func() time.Time
	// reauth is set on an Authenticator that re-authenticates a session.
	reauth *reauthOf
	// Expires is when the session ends (zero: never); set once
	// authenticated.
	Expires time.Time
	// Reauthenticates tells whether the client may re-authenticate
	// (it used SaslAuthenticate v1+).
	Reauthenticates bool
}

// reauthOf is the session being re-authenticated.
type reauthOf struct {
	principal, mechanism string
}

// SetMaxReauth sets connections.max.reauth.ms and the clock.
func (a *Authenticator) SetMaxReauth(d time.Duration, now func() time.Time) {
	a.maxReauth, a.now = d, now
}

// Mechanism is the mechanism the client authenticated with.
func (a *Authenticator) Mechanism() string { return a.mechName }

// Reauthenticate returns an authenticator for the re-authentication of the
// session a authenticated: it starts at SaslHandshake (which must name the
// same mechanism) and must end with the same principal.
func (a *Authenticator) Reauthenticate(next *Authenticator) *Authenticator {
	next.reauth = &reauthOf{principal: a.Principal, mechanism: a.mechName}
	next.state = authHandshake
	return next
}

// lifetimed is a mechanism whose credential expires (OAUTHBEARER tokens).
type lifetimed interface{ lifetime() time.Time }

// finishSession ends a successful SaslAuthenticate: a re-authentication
// must keep the principal; the session's lifetime goes in the response
// (v1+), as Kafka's ReauthInfo computes it.
func (a *Authenticator) finishSession(resp *kmsg.SASLAuthenticateResponse, version int16, corr int32) (Output, bool) {
	if a.reauth != nil && a.Principal != a.reauth.principal {
		msg := fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", a.reauth.principal, a.Principal)
		resp.ErrorCode, resp.ErrorMessage, resp.SASLAuthBytes = kerr.SaslAuthenticationFailed.Code, &msg, nil
		return a.failed(Output{Resp: resp, Corr: corr, Close: true, Reason: msg}), true
	}
	if version < 1 {
		return Output{}, false
	}
	a.Reauthenticates = true
	now := time.Now()
	if a.now != nil {
		now = a.now()
	}
	var lifetime time.Duration
	var credExpiry time.Time
	if l, ok := a.mech.(lifetimed); ok {
		credExpiry = l.lifetime()
	}
	switch {
	case credExpiry.IsZero() && a.maxReauth <= 0:
		return Output{}, false
	case credExpiry.IsZero():
		lifetime = a.maxReauth
	case a.maxReauth <= 0:
		lifetime = max(credExpiry.Sub(now), 0)
	default:
		lifetime = max(min(credExpiry.Sub(now), a.maxReauth), 0)
	}
	resp.SessionLifetimeMillis = lifetime.Milliseconds()
	a.Expires = now.Add(lifetime)
	return Output{}, false
}
