package broker

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
// with the principal User:<name>. Re-authentication (KIP-368,
// connections.max.reauth.ms) is not supported: SaslHandshake and
// SaslAuthenticate on an authenticated connection, or on a PLAINTEXT
// listener, get ILLEGAL_SASL_STATE as Kafka's KafkaApis answers them.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslMaxReceiveSize bounds a frame during authentication (Kafka's
// sasl.server.max.receive.size default).
const saslMaxReceiveSize = 524288

// anonymousPrincipal is the principal of a connection that did not
// authenticate (PLAINTEXT listeners), Kafka's KafkaPrincipal.ANONYMOUS.
const anonymousPrincipal = "User:ANONYMOUS"

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

// authenticator is the authentication state of one connection. It does no
// I/O: handle takes each frame read and says what to write and whether to go
// on, so the sequence can be tested frame by frame.
type authenticator struct {
	state      authState
	mechanisms []string
	// raw is set by SaslHandshake v0: tokens are frames without headers.
	raw      bool
	mechName string
	mech     saslMechServer
	// principal is "User:<name>" once state is authComplete.
	principal string

	newMech     func(name string) saslMechServer
	apiVersions func(req protocol.Request) kmsg.Response
}

// authOutput is what the connection does with one frame's outcome.
type authOutput struct {
	// resp answers the request with correlation id corr.
	resp kmsg.Response
	corr int32
	// token, when rawReply, is written as a size-prefixed frame (v0 mode).
	token    []byte
	rawReply bool
	// close ends the connection after writing; reason is logged once.
	close  bool
	reason string
}

// handle processes one frame read during authentication.
func (a *authenticator) handle(frame []byte) authOutput {
	if a.state == authToken && a.raw {
		out, done, err := a.mech.step(frame)
		if err != nil {
			return authOutput{close: true, reason: fmt.Sprintf("SASL %s authentication failed: %v", a.mechName, err)}
		}
		a.complete(done)
		return authOutput{token: out, rawReply: true}
	}
	req, err := protocol.ParseRequest(frame)
	if err != nil {
		return authOutput{close: true, reason: fmt.Sprintf("invalid request during SASL authentication (client on the wrong security protocol, or not a Kafka client?): %v", err)}
	}
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
			return authOutput{resp: resp, corr: corr}
		case key == int16(kmsg.SASLHandshake) && req.Body != nil:
			return a.handshake(req.Body.(*kmsg.SASLHandshakeRequest), corr)
		}
		return authOutput{close: true, reason: fmt.Sprintf("unexpected %s v%d during SASL handshake", name, req.Header.APIVersion)}
	case authToken:
		if key == int16(kmsg.SASLAuthenticate) && req.Body != nil {
			return a.authenticate(req.Body.(*kmsg.SASLAuthenticateRequest), corr)
		}
		out := authOutput{close: true, reason: fmt.Sprintf("unexpected %s v%d during SASL authentication", name, req.Header.APIVersion)}
		if r, ok := req.Body.(*kmsg.SASLHandshakeRequest); ok {
			resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
			resp.ErrorCode = kerr.IllegalSaslState.Code
			out.resp, out.corr = resp, corr
		}
		return out
	}
	return authOutput{close: true, reason: "request after SASL authentication completed"}
}

func (a *authenticator) handshake(r *kmsg.SASLHandshakeRequest, corr int32) authOutput {
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = a.mechanisms
	if !slices.Contains(a.mechanisms, r.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return authOutput{resp: resp, corr: corr, close: true, reason: fmt.Sprintf("unsupported SASL mechanism %q", r.Mechanism)}
	}
	a.mechName, a.mech = r.Mechanism, a.newMech(r.Mechanism)
	a.raw = r.Version == 0
	a.state = authToken
	return authOutput{resp: resp, corr: corr}
}

func (a *authenticator) authenticate(r *kmsg.SASLAuthenticateRequest, corr int32) authOutput {
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
		return authOutput{resp: resp, corr: corr, close: true, reason: fmt.Sprintf("SASL %s authentication failed: %v", a.mechName, err)}
	}
	resp.SASLAuthBytes = out
	a.complete(done)
	return authOutput{resp: resp, corr: corr}
}

func (a *authenticator) complete(done bool) {
	if done {
		a.state = authComplete
		a.principal = "User:" + a.mech.principal()
	}
}

// newAuthenticator starts the authentication of a connection on listener l.
func (b *Broker) newAuthenticator(l config.Listener) *authenticator {
	users := b.cfg.SASL.PlainUsers[l.Name]
	return &authenticator{
		mechanisms: b.cfg.SASL.MechanismsFor(l.Name),
		newMech: func(name string) saslMechServer {
			if name == config.MechPlain {
				return &plainServer{users: users}
			}
			return newScramServer(scramMechByName(name), func(user string) (controller.ScramCredential, bool) {
				return b.store.ScramCredential(user, name)
			})
		},
		apiVersions: func(req protocol.Request) kmsg.Response {
			if req.Body == nil {
				return b.apiVersionsUnsupported()
			}
			return b.handleApiVersions(&reqCtx{hdr: req.Header}, req.Body.(*kmsg.ApiVersionsRequest))
		},
	}
}

// authenticate runs the SASL exchange on a new connection of a SASL
// listener, reading from r and writing to w. It reports whether the client
// authenticated; the connection is closed by the caller otherwise.
func (c *conn) authenticate(r *bufio.Reader, w *bufio.Writer) bool {
	a := c.b.newAuthenticator(c.listener)
	var buf []byte
	for {
		frame, err := readSASLFrame(r)
		if err != nil {
			c.logReadError(err)
			return false
		}
		out := a.handle(frame)
		buf = buf[:0]
		switch {
		case out.resp != nil:
			buf = protocol.AppendResponse(buf, out.corr, out.resp)
		case out.rawReply:
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(out.token)))
			buf = append(buf, out.token...)
		}
		if _, err := w.Write(buf); err != nil {
			return false
		}
		if err := w.Flush(); err != nil {
			return false
		}
		if out.close {
			c.b.log.Warn("closing connection during SASL authentication", "client", c.addr, "listener", c.listener.Name, "reason", out.reason)
			return false
		}
		if a.state == authComplete {
			c.principal = a.principal
			return true
		}
	}
}

// readSASLFrame reads one size-prefixed frame of at most
// saslMaxReceiveSize bytes. Unlike protocol.ReadFrame it accepts frames
// shorter than a request header: raw tokens can be that short.
func readSASLFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > saslMaxReceiveSize {
		return nil, fmt.Errorf("SASL frame size %d outside [0, %d]", n, saslMaxReceiveSize)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return frame, nil
}

// handleSASLHandshake answers a SaslHandshake outside authentication.
func (b *Broker) handleSASLHandshake(_ *reqCtx, req *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp
}

// handleSASLAuthenticate answers a SaslAuthenticate outside authentication.
func (b *Broker) handleSASLAuthenticate(_ *reqCtx, req *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp
}
