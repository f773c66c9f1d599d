package network

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// fileSection is a protocol.Section over a range of an *os.File.
type fileSection struct {
	f        *os.File
	off, n   int64
	noFile   bool
	released bool
}

func (s *fileSection) Len() int64 { return s.n }
func (s *fileSection) WriteTo(w io.Writer) (int64, error) {
	n, err := io.Copy(w, io.NewSectionReader(s.f, s.off, s.n))
	if err == nil && n < s.n {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
func (s *fileSection) ReadAt(p []byte, off int64) (int, error) { return s.f.ReadAt(p, s.off+off) }
func (s *fileSection) File() (*os.File, int64, bool)           { return s.f, s.off, !s.noFile }
func (s *fileSection) Release()                                { s.released = true }

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// TestSendSection: a range larger than the socket buffers arrives intact
// after what the writer held, by sendfile and by the copying path; a range
// past the file's end is an error, not a short frame.
func TestSendSection(t *testing.T) {
	data := make([]byte, 8<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "seg.log")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	for _, tc := range []struct {
		name   string
		noFile bool
		off, n int64
	}{
		{"sendfile", false, 1234, int64(len(data)) - 5000},
		{"copy", true, 1234, int64(len(data)) - 5000},
		{"small range copied into the buffer", false, 10, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tcpPair(t)
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(io.LimitReader(client, 5+tc.n+3))
				got <- b
			}()
			w := bufio.NewWriterSize(server, 64<<10)
			w.WriteString("head:")
			if err := sendSection(server, w, &fileSection{f: f, off: tc.off, n: tc.n, noFile: tc.noFile}); err != nil {
				t.Fatal(err)
			}
			w.WriteString("end")
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			want := append(append([]byte("head:"), data[tc.off:tc.off+tc.n]...), "end"...)
			if b := <-got; !bytes.Equal(b, want) {
				t.Fatalf("received %d bytes, want %d (equal prefix %v)", len(b), len(want), bytes.HasPrefix(want, b))
			}
		})
	}
	t.Run("past the end of the file", func(t *testing.T) {
		client, server := tcpPair(t)
		go func() { _, _ = io.Copy(io.Discard, client) }()
		w := bufio.NewWriterSize(server, 64<<10)
		err := sendSection(server, w, &fileSection{f: f, off: int64(len(data)) - 100_000, n: 200_000})
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("sendSection past the end: %v, want io.ErrUnexpectedEOF", err)
		}
	})
}
