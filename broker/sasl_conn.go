package broker

// Connection side of SASL authentication: the frame loop of a SASL listener
// connection (the state machine is authenticator, sasl_auth.go).

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network/sasl"
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

// newAuthenticator starts the authentication of a connection on listener l.
func (b *Broker) newAuthenticator(l config.Listener) *sasl.Authenticator {
	return sasl.NewAuthenticator(b.cfg.SASL.MechanismsFor(l.Name), b.cfg.SASL.PlainUsers[l.Name], b.store.ScramCredential,
		func(req protocol.Request) kmsg.Response {
			if req.Body == nil {
				return b.apiVersionsUnsupported()
			}
			return b.handleApiVersions(&reqCtx{hdr: req.Header}, req.Body.(*kmsg.ApiVersionsRequest))
		})
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
		out := a.Handle(frame)
		buf = buf[:0]
		switch {
		case out.Resp != nil:
			buf = protocol.AppendResponse(buf, out.Corr, out.Resp)
		case out.RawReply:
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(out.Token)))
			buf = append(buf, out.Token...)
		}
		if _, err := w.Write(buf); err != nil {
			return false
		}
		if err := w.Flush(); err != nil {
			return false
		}
		if out.Close {
			c.b.log.Warn("closing connection during SASL authentication", "client", c.addr, "listener", c.listener.Name, "reason", out.Reason)
			return false
		}
		if a.Authenticated() {
			c.principal = a.Principal
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
