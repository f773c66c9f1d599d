package network

import (
	"bufio"
	"time"

	"github.com/kbroker/kbroker/broker/network/sasl"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslSession is an authenticated SASL connection's session (KIP-368,
// network/sasl/reauth.go): when it expires, the client must have
// re-authenticated on the connection, or its next request closes it.
type saslSession struct {
	// auth is the last successful authentication.
	auth *sasl.Authenticator
	// expires is when the session ends (zero: never).
	expires time.Time
	// reauth is a re-authentication in progress.
	reauth *sasl.Authenticator
}

// saslRequest answers the requests of a re-authentication (a SaslHandshake
// from a client that may re-authenticate, then its SaslAuthenticate
// requests), and closes a connection whose session expired. handled tells
// whether it dealt with the request; open whether the connection stays.
func (c *conn) saslRequest(item queued, w *bufio.Writer, buf *[]byte) (handled, open bool) {
	s := c.sess
	if s == nil {
		return false, true
	}
	key := item.req.Header.APIKey
	switch {
	case s.reauth != nil:
	case key == int16(kmsg.SASLHandshake) && s.auth.Reauthenticates:
		s.reauth = s.auth.Reauthenticate(c.s.cfg.NewAuthenticator(c.listener))
	case !s.expires.IsZero() && time.Now().After(s.expires):
		c.s.log.Info("closing connection: SASL session expired without re-authentication",
			"client", c.addr, "listener", c.listener.Name, "principal", c.principal)
		return true, false
	default:
		return false, true
	}
	out := s.reauth.HandleRequest(item.req)
	c.throttleWait(out.Delay)
	if out.Resp != nil {
		*buf = protocol.AppendResponse((*buf)[:0], out.Corr, out.Resp)
		if _, err := w.Write(*buf); err != nil {
			return true, false
		}
		if err := w.Flush(); err != nil {
			return true, false
		}
	}
	if out.Close {
		c.s.log.Warn("closing connection during SASL re-authentication", "client", c.addr, "listener", c.listener.Name, "reason", out.Reason)
		return true, false
	}
	if s.reauth.Authenticated() {
		s.auth, s.expires, s.reauth = s.reauth, s.reauth.Expires, nil
	}
	return true, true
}
