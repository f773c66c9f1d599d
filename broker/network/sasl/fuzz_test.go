package sasl

import (
	"bytes"
	"testing"
)

// FuzzScramServer feeds arbitrary client messages to the SCRAM server: it
// must answer or refuse, never panic, and never authenticate without the
// right proof.
func FuzzScramServer(f *testing.F) {
	f.Add([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"), []byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	f.Add([]byte("n,a=x,n=us=2Cer,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("y,,n=user,r="), []byte(""))
	f.Add([]byte(""), []byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := rfc7677Server(t)
		if _, done, err := s.step(first); err != nil || done {
			return
		}
		_, done, err := s.step(final)
		if done && err == nil && !bytes.Contains(final, []byte("p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")) {
			t.Fatalf("authenticated without the RFC 7677 proof: %q / %q", first, final)
		}
	})
}

// FuzzAuthenticator feeds arbitrary frames to the connection's SASL state
// machine: every frame gets an outcome, never a panic.
func FuzzAuthenticator(f *testing.F) {
	f.Add([]byte{0, 17, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0, 5, 'P', 'L', 'A', 'I', 'N'}, []byte("\x00alice\x00secret"))
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, []byte{0, 36, 0, 2})
	f.Add([]byte{}, []byte{0xff})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		auth := testAuthenticator(map[string]string{"alice": "secret"})
		for _, frame := range [][]byte{a, b, a} {
			if out := auth.Handle(frame); out.Close {
				return
			}
		}
	})
}
