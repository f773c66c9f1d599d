package api

// SASL outside the network layer: the authenticator a SASL listener's
// connections run (network/sasl), and the answers to SaslHandshake and
// SaslAuthenticate after authentication or on a PLAINTEXT listener.

import (
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/network/sasl"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"time"
)

// scramCredential looks a user's credential up in the metadata store.
func (b *API) scramCredential(user, mechanism string) (sasl.Credential, bool) {
	c, ok := b.store.ScramCredential(user, mechanism)
	return sasl.Credential(c), ok
}

// NewAuthenticator starts the authentication of a connection on listener l.
func (b *API) NewAuthenticator(l config.Listener) *sasl.Authenticator {
	a := b.newAuthenticator(l)
	a.SetFailureDelay(time.Duration(b.cfg.SASL.FailedAuthenticationDelayMs) * time.Millisecond)
	a.SetMaxReauth(time.Duration(b.cfg.SASL.ConnectionsMaxReauthMs)*time.Millisecond, b.now)
	if v := b.oauthValidator(l.Name); v != nil { // sasl_oauth.go
		a.SetOAuth(v)
	}
	return a
}

func (b *API) newAuthenticator(l config.Listener) *sasl.Authenticator {
	return sasl.NewAuthenticator(b.cfg.SASL.MechanismsFor(l.Name), b.cfg.SASL.PlainUsers[l.Name], b.scramCredential,
		func(req protocol.Request) kmsg.Response {
			if req.Body == nil {
				return b.apiVersionsUnsupported()
			}
			return b.handleApiVersions(&network.RequestContext{Header: req.Header}, req.Body.(*kmsg.ApiVersionsRequest))
		})
}

// handleSASLHandshake answers a SaslHandshake outside authentication.
func (b *API) handleSASLHandshake(_ *network.RequestContext, req *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp
}

// handleSASLAuthenticate answers a SaslAuthenticate outside authentication.
func (b *API) handleSASLAuthenticate(_ *network.RequestContext, req *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp
}
