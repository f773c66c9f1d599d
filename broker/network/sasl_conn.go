package network

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kbroker/kbroker/protocol"
)

// saslMaxReceiveSize bounds a frame during authentication (Kafka's
// sasl.server.max.receive.size default).
const saslMaxReceiveSize = 524288

// AnonymousPrincipal is the principal of a connection that did not
// authenticate (PLAINTEXT listeners), Kafka's KafkaPrincipal.ANONYMOUS.
const AnonymousPrincipal = "User:ANONYMOUS"

// authenticate runs the SASL exchange on a new connection of a SASL
// listener, reading from r and writing to w. It reports whether the client
// authenticated; the connection is closed by the caller otherwise.
func (c *conn) authenticate(r *bufio.Reader, w *bufio.Writer) bool {
	a := c.s.cfg.NewAuthenticator(c.listener)
	var buf []byte
	for {
		frame, err := readSASLFrame(r)
		if err != nil {
			c.logReadError(err)
			return false
		}
		out := a.Handle(frame)
		c.throttleWait(out.Delay) // a failed authentication answers late (throttle.go)
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
			c.s.log.Warn("closing connection during SASL authentication", "client", c.addr, "listener", c.listener.Name, "reason", out.Reason)
			return false
		}
		if a.Authenticated() {
			c.principal = a.Principal
			c.sess = &saslSession{auth: a, expires: a.Expires}
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
