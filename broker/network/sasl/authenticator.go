// Package sasl holds the server side of SASL authentication: the state
// machine of one connection (Authenticator), PLAIN, SCRAM and OAUTHBEARER
// with the unsecured JWS validator (the JWKS one is package jwks). It does
// no I/O.
//
// SASL authentication of connections on SASL_PLAINTEXT listeners, as Kafka's
// SaslServerAuthenticator runs it, before any other request is served:
//
//   - First ApiVersions (optional, once; answered at an unknown version with
//     UNSUPPORTED_VERSION and the client may retry) and then SaslHandshake
//     v0–v1 (KIP-43). A mechanism not enabled on the listener is answered
//     with UNSUPPORTED_SASL_MECHANISM and the enabled ones, then the
//     connection is closed. Any other request closes the connection without
//     an answer.
//   - After SaslHandshake v1, SaslAuthenticate v0–v2 requests carry the
//     mechanism's tokens. A failure is answered with SASL_AUTHENTICATION_FAILED
//     and a message, then the connection is closed. Another request in this
//     state closes the connection (a SaslHandshake is first answered with
//     ILLEGAL_SASL_STATE).
//   - After SaslHandshake v0 (clients before KIP-152) the tokens travel as raw
//     size-prefixed frames without Kafka headers; a failure closes the
//     connection without an answer.
//
// The exchange is one frame at a time (Kafka mutes the channel meanwhile);
// once authenticated, the connection serves requests as a PLAINTEXT one does,
// with the principal User:<name>. A failed authentication is answered after
// connection.failed.authentication.delay.ms. Re-authentication (KIP-368,
// reauth.go): a session with a lifetime (connections.max.reauth.ms, an
// OAUTHBEARER token's expiry) tells the client in SaslAuthenticate v1+, and
// the client re-authenticates on the connection with SaslHandshake and
// SaslAuthenticate (the network layer routes them here; the mechanism and
// principal must stay the same). SaslHandshake and SaslAuthenticate from a
// client that cannot re-authenticate, or on a PLAINTEXT listener, get
// ILLEGAL_SASL_STATE as Kafka's KafkaApis answers them.
package sasl

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authState is where a connection is in the authentication sequence.
type authState int

const (
	authInitial   authState = iota // ApiVersions or SaslHandshake
	authHandshake                  // ApiVersions answered: SaslHandshake only
	authToken                      // mechanism chosen: its tokens
	authComplete                   // authenticated
)

// saslMechServer is the server side of one mechanism's exchange.
type saslMechServer interface {
	// step takes the client's next token and returns the server's; done
	// is true once the client is authenticated.
	step(in []byte) (out []byte, done bool, err error)
	// principal is the authenticated user name.
	principal() string
}

// plainServer is SASL/PLAIN's one step.
type plainServer struct {
	users map[string]string
	user  string
}

func (p *plainServer) step(in []byte) ([]byte, bool, error) {
	user, err := plainAuthenticate(in, p.users)
	if err != nil {
		return nil, false, err
	}
	p.user = user
	return []byte{}, true, nil
}

func (p *plainServer) principal() string { return p.user }

// Authenticator is the authentication state of one connection. It does no
// I/O: handle takes each frame read and says what to write and whether to go
// on, so the sequence can be tested frame by frame.
type Authenticator struct {
	state      authState
	mechanisms []string
	// raw is set by SaslHandshake v0: tokens are frames without headers.
	raw      bool
	mechName string
	mech     saslMechServer
	// Principal is "User:<name>" once state is authComplete.
	Principal string

	newMech     func(name string) saslMechServer
	apiVersions func(req protocol.Request) kmsg.Response
	oauth       OAuthValidator
	failDelay   time.Duration
	// session is KIP-368's state (reauth.go).
	session
}

// Output is what the connection does with one frame's outcome.
type Output struct {
	// Resp answers the request with correlation id corr.
	Resp kmsg.Response
	Corr int32
	// Token, when rawReply, is written as a size-prefixed frame (v0 mode).
	Token    []byte
	RawReply bool
	// Close ends the connection after writing; reason is logged once.
	Close  bool
	Reason string
	// Delay, on a failed authentication, is how long the answer waits
	// before it is written and the connection closed
	// (connection.failed.authentication.delay.ms), so a client guessing
	// passwords cannot go fast.
	Delay time.Duration
}

// SetFailureDelay sets connection.failed.authentication.delay.ms.
func (a *Authenticator) SetFailureDelay(d time.Duration) { a.failDelay = d }

// failed marks out as a failed authentication: its answer is delayed.
func (a *Authenticator) failed(out Output) Output {
	out.Delay = a.failDelay
	return out
}

// NewAuthenticator starts the authentication of one connection. mechanisms
// are the ones enabled on its listener, plainUsers PLAIN's users and
// passwords, scram looks up a user's stored SCRAM credential, and
// apiVersions answers an ApiVersions request (a nil Body: an unsupported
// version) before the handshake.
func NewAuthenticator(mechanisms []string, plainUsers map[string]string,
	scram func(user, mechanism string) (Credential, bool),
	apiVersions func(req protocol.Request) kmsg.Response) *Authenticator {
	a := &Authenticator{mechanisms: mechanisms, apiVersions: apiVersions}
	a.newMech = func(name string) saslMechServer {
		switch name {
		case config.MechPlain:
			return &plainServer{users: plainUsers}
		case MechOAuthBearer:
			return &oauthServer{v: a.oauth}
		}
		return newScramServer(scramMechByName(name), func(user string) (Credential, bool) {
			return scram(user, name)
		})
	}
	return a
}

// SetOAuth sets the validator of OAUTHBEARER tokens (the listener's server
// callback handler); without one OAUTHBEARER fails.
func (a *Authenticator) SetOAuth(v OAuthValidator) { a.oauth = v }

// Handle processes one frame read during authentication.
func (a *Authenticator) Handle(frame []byte) Output {
	if a.state == authToken && a.raw {
		out, done, err := a.mech.step(frame)
		if err != nil {
			return a.failed(Output{Close: true, Reason: fmt.Sprintf("SASL %s authentication failed: %v", a.mechName, err)})
		}
		a.complete(done)
		return Output{Token: out, RawReply: true}
	}
	req, err := protocol.ParseRequest(frame)
	if err != nil {
		return Output{Close: true, Reason: fmt.Sprintf("invalid request during SASL authentication (client on the wrong security protocol, or not a Kafka client?): %v", err)}
	}
	return a.HandleRequest(req)
}

// HandleRequest processes one decoded request during authentication (or
// re-authentication, reauth.go).
func (a *Authenticator) HandleRequest(req protocol.Request) Output {
	key, name := req.Header.APIKey, kmsg.NameForKey(req.Header.APIKey)
	corr := req.Header.CorrelationID
	switch a.state {
	case authInitial, authHandshake:
		switch {
		case key == int16(kmsg.ApiVersions) && a.state == authInitial:
			resp := a.apiVersions(req)
			if r, ok := resp.(*kmsg.ApiVersionsResponse); ok && r.ErrorCode == 0 {
				a.state = authHandshake
			}
			return Output{Resp: resp, Corr: corr}
		case key == int16(kmsg.SASLHandshake) && req.Body != nil:
			return a.handshake(req.Body.(*kmsg.SASLHandshakeRequest), corr)
		}
		return Output{Close: true, Reason: fmt.Sprintf("unexpected %s v%d during SASL handshake", name, req.Header.APIVersion)}
	case authToken:
		if key == int16(kmsg.SASLAuthenticate) && req.Body != nil {
			return a.authenticate(req.Body.(*kmsg.SASLAuthenticateRequest), corr)
		}
		out := Output{Close: true, Reason: fmt.Sprintf("unexpected %s v%d during SASL authentication", name, req.Header.APIVersion)}
		if r, ok := req.Body.(*kmsg.SASLHandshakeRequest); ok {
			resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
			resp.ErrorCode = kerr.IllegalSaslState.Code
			out.Resp, out.Corr = resp, corr
			out = a.failed(out)
		}
		return out
	}
	return Output{Close: true, Reason: "request after SASL authentication completed"}
}

func (a *Authenticator) handshake(r *kmsg.SASLHandshakeRequest, corr int32) Output {
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = a.mechanisms
	if !slices.Contains(a.mechanisms, r.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return a.failed(Output{Resp: resp, Corr: corr, Close: true, Reason: fmt.Sprintf("unsupported SASL mechanism %q", r.Mechanism)})
	}
	if a.reauth != nil && r.Mechanism != a.reauth.mechanism {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return a.failed(Output{Resp: resp, Corr: corr, Close: true, Reason: fmt.Sprintf(
			"SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", r.Mechanism, a.reauth.mechanism)})
	}
	a.mechName, a.mech = r.Mechanism, a.newMech(r.Mechanism)
	a.raw = r.Version == 0
	a.state = authToken
	return Output{Resp: resp, Corr: corr}
}

func (a *Authenticator) authenticate(r *kmsg.SASLAuthenticateRequest, corr int32) Output {
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, done, err := a.mech.step(r.SASLAuthBytes)
	if err != nil {
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + a.mechName
		var ce *saslClientError
		if errors.As(err, &ce) {
			msg = ce.msg
		}
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		return a.failed(Output{Resp: resp, Corr: corr, Close: true, Reason: fmt.Sprintf("SASL %s authentication failed: %v", a.mechName, err)})
	}
	resp.SASLAuthBytes = out
	a.complete(done)
	if done {
		if fail, bad := a.finishSession(resp, r.Version, corr); bad { // reauth.go
			return fail
		}
	}
	return Output{Resp: resp, Corr: corr}
}

// Authenticated reports whether the client has authenticated.
func (a *Authenticator) Authenticated() bool { return a.state == authComplete }

func (a *Authenticator) complete(done bool) {
	if done {
		a.state = authComplete
		a.Principal = "User:" + a.mech.principal()
	}
}
