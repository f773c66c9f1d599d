package network

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/kbroker/kbroker/protocol"
)

// writeSpliced writes a response whose records are file ranges
// (protocol.Spliced, a Fetch answer): the encoded fields through w, each
// range with sendfile(2) straight from the segment file to the socket when
// the connection is plain TCP, so log bytes never enter user space. On TLS
// (or any other connection, or a range without an OS file) the range is
// copied through w. The bytes are those kmsg would encode either way.
func (c *conn) writeSpliced(w *bufio.Writer, buf *[]byte, corr int32, spl *protocol.Spliced) error {
	enc, heads, secs, err := spl.Frame(*buf, corr)
	*buf = enc
	if err != nil {
		return err
	}
	tcp, _ := c.nc.(*net.TCPConn)
	for i, h := range heads {
		if _, err := w.Write(h); err != nil {
			return err
		}
		if i == len(secs) {
			break
		}
		if err := sendSection(tcp, w, secs[i]); err != nil {
			return err
		}
	}
	return nil
}

// sendSection writes sec after what w holds: with sendfile when tcp is set
// and sec has an OS file, else copying through w.
func sendSection(tcp *net.TCPConn, w *bufio.Writer, sec protocol.Section) error {
	f, off, ok := sec.File()
	if tcp == nil || !ok {
		_, err := sec.WriteTo(w)
		return err
	}
	if sec.Len() <= int64(w.Available()) {
		// Small ranges are cheaper copied into the pending write than
		// sent with a flush and a syscall of their own.
		_, err := sec.WriteTo(w)
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	out, err := tcp.SyscallConn()
	if err != nil {
		return err
	}
	in, err := f.SyscallConn()
	if err != nil {
		return err
	}
	n := sec.Len()
	var sent int64
	var serr error
	cerr := in.Control(func(infd uintptr) {
		werr := out.Write(func(outfd uintptr) bool {
			for sent < n {
				o := off + sent
				k, err := syscall.Sendfile(int(outfd), int(infd), &o, int(min(n-sent, 1<<30)))
				if k > 0 {
					sent += int64(k)
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(err, syscall.EINTR):
				case err != nil:
					serr = err
					return true
				case k == 0:
					// The file is shorter than the range: truncated since
					// the read (a leader turned follower). The frame's
					// length is already on the wire; close the connection.
					serr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr == nil {
		serr = cerr
	}
	if serr != nil {
		return fmt.Errorf("sendfile %d of %d bytes at %d: %w", sent, n, off, serr)
	}
	return nil
}
