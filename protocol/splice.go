package protocol

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Section is a byte range a response holds by reference instead of in
// memory: a segment file's records (storage.Section), written to the
// connection with sendfile when the response is written.
type Section interface {
	// Len is the range's byte length.
	Len() int64
	// WriteTo copies the range to w through user space (TLS, or no OS
	// file); a range that ends early is an error.
	WriteTo(w io.Writer) (int64, error)
	// ReadAt reads the range's bytes, off relative to its start.
	ReadAt(p []byte, off int64) (int, error)
	// File is the OS file and the range's offset in it, for sendfile; ok
	// is false when there is none.
	File() (f *os.File, off int64, ok bool)
	// Release lets the file go; later calls do nothing.
	Release()
}

// tokenLen is the length of a placeholder: an 8-byte process nonce and an
// 8-byte section number.
const tokenLen = 16

// tokenNonce makes placeholders unguessable, so no bytes a client chose (a
// topic name, a client id) can be mistaken for one.
var tokenNonce = func() (n [8]byte) {
	_, _ = rand.Read(n[:]) // never fails on Linux (crypto/rand docs)
	return n
}()

// Spliced is a response some of whose byte fields are Sections. The
// response holds, in each such field, a placeholder that Add returned;
// Frame encodes it with kmsg and cuts the placeholders out, so the bytes
// on the wire are exactly what kmsg would encode if each field held its
// section's bytes (the field's length prefix is rewritten for the real
// length: int32, or a uvarint of length+1 in flexible versions — kmsg's
// nullable-bytes encoding, which is how Fetch encodes RecordBatches at
// every version).
//
// It is a kmsg.Response (the embedded one), so code that knows nothing of
// sections still works: its AppendTo reads the sections into the encoding.
// Whoever writes it calls Release once the bytes are out (or dropped).
type Spliced struct {
	kmsg.Response
	sections []Section
	// err is the first section read error of AppendTo (which cannot
	// return one).
	err error
}

// NewSpliced wraps resp, whose placeholders Add will hand out.
func NewSpliced(resp kmsg.Response) *Spliced { return &Spliced{Response: resp} }

// Throttle is the wrapped response's throttle (kmsg.ThrottleResponse),
// which embedding the kmsg.Response interface would not carry over.
func (s *Spliced) Throttle() (int32, bool) {
	if t, ok := s.Response.(kmsg.ThrottleResponse); ok {
		return t.Throttle()
	}
	return 0, false
}

// SetThrottle sets the wrapped response's throttle
// (kmsg.SetThrottleResponse).
func (s *Spliced) SetThrottle(ms int32) {
	if t, ok := s.Response.(kmsg.SetThrottleResponse); ok {
		t.SetThrottle(ms)
	}
}

// Add registers sec and returns the placeholder to store in the byte field
// that stands for it. The Spliced owns sec from now on.
func (s *Spliced) Add(sec Section) []byte {
	t := make([]byte, tokenLen)
	copy(t, tokenNonce[:])
	binary.BigEndian.PutUint64(t[8:], uint64(len(s.sections)))
	s.sections = append(s.sections, sec)
	return t
}

// Lookup returns the section whose placeholder b is, if it is one.
func (s *Spliced) Lookup(b []byte) (Section, bool) {
	if s == nil || len(b) != tokenLen || !bytes.Equal(b[:8], tokenNonce[:]) {
		return nil, false
	}
	i := binary.BigEndian.Uint64(b[8:])
	if i >= uint64(len(s.sections)) || s.sections[i] == nil {
		return nil, false
	}
	return s.sections[i], true
}

// FieldLen is len(b), or the length of the section b stands for.
func (s *Spliced) FieldLen(b []byte) int64 {
	if sec, ok := s.Lookup(b); ok {
		return sec.Len()
	}
	return int64(len(b))
}

// Reset releases every section and forgets them; placeholders handed out
// before no longer resolve (a delayed fetch that reads again).
func (s *Spliced) Reset() {
	for i, sec := range s.sections {
		if sec != nil {
			sec.Release()
			s.sections[i] = nil
		}
	}
	s.sections = s.sections[:0]
}

// Release releases every section; call it once the response is written
// or dropped.
func (s *Spliced) Release() { s.Reset() }

// Err is the first read error AppendTo met.
func (s *Spliced) Err() error { return s.err }

// cut is one placeholder found in an encoding.
type cut struct {
	at     int // index of the length prefix
	prefix int // length of the prefix
	sec    Section
}

// cuts finds the placeholders in enc, in order, checking that each sits
// behind kmsg's length prefix for tokenLen bytes.
func (s *Spliced) cuts(enc []byte) ([]cut, error) {
	var out []cut
	flexible := s.Response.IsFlexible()
	var want []byte
	if flexible {
		want = binary.AppendUvarint(nil, tokenLen+1)
	} else {
		want = binary.BigEndian.AppendUint32(nil, tokenLen)
	}
	t := make([]byte, tokenLen)
	copy(t, tokenNonce[:])
	for i, sec := range s.sections {
		if sec == nil {
			continue
		}
		binary.BigEndian.PutUint64(t[8:], uint64(i))
		p := bytes.Index(enc, t)
		if p < 0 {
			continue // not in the answer (a session left the partition out)
		}
		if p < len(want) || !bytes.Equal(enc[p-len(want):p], want) {
			return nil, fmt.Errorf("placeholder %d at %d not behind a bytes length prefix", i, p)
		}
		out = append(out, cut{at: p - len(want), prefix: len(want), sec: sec})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out, nil
}

// appendLen appends kmsg's length prefix for n bytes.
func appendLen(dst []byte, n int64, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// Frame encodes the response frame (size, header, body; as AppendResponse)
// into dst as pieces to write in order: heads[0], secs[0], heads[1], …,
// secs[n-1], heads[n]. The heads are slices of the returned buffer.
func (s *Spliced) Frame(dst []byte, correlationID int32) (buf []byte, heads [][]byte, secs []Section, err error) {
	enc := AppendResponse(dst[:0], correlationID, s.Response)
	cs, err := s.cuts(enc)
	if err != nil || len(cs) == 0 {
		return enc, [][]byte{enc}, nil, err
	}
	// Rewrite in place, moving bytes left: every placeholder (tokenLen)
	// plus its old prefix is at least as long as the new prefix (≤ 5
	// bytes flexible, 4 not), so writes never overtake reads.
	flexible := s.Response.IsFlexible()
	size := int64(len(enc) - 4)
	var prefix [binary.MaxVarintLen64]byte
	w, r := 0, 0
	starts := make([]int, 0, len(cs)+1)
	ends := make([]int, 0, len(cs)+1)
	starts = append(starts, 0)
	for _, c := range cs {
		w += copy(enc[w:], enc[r:c.at])
		pl := appendLen(prefix[:0], c.sec.Len(), flexible)
		w += copy(enc[w:], pl)
		ends = append(ends, w)
		starts = append(starts, w)
		r = c.at + c.prefix + tokenLen
		size += int64(len(pl)-c.prefix-tokenLen) + c.sec.Len()
		secs = append(secs, c.sec)
	}
	w += copy(enc[w:], enc[r:])
	ends = append(ends, w)
	enc = enc[:w]
	if size > 1<<31-1 {
		return enc, nil, nil, fmt.Errorf("response of %d bytes exceeds a frame", size)
	}
	binary.BigEndian.PutUint32(enc, uint32(size))
	heads = make([][]byte, len(starts))
	for i := range starts {
		heads[i] = enc[starts[i]:ends[i]]
	}
	return enc, heads, secs, nil
}

// AppendTo appends the response body with every section's bytes in place
// of its placeholder: the copying encoding, for code that does not know
// sections. A section that cannot be read leaves zeros and sets Err.
func (s *Spliced) AppendTo(dst []byte) []byte {
	enc := s.Response.AppendTo(nil)
	cs, err := s.cuts(enc)
	if err != nil && s.err == nil {
		s.err = err
	}
	flexible := s.Response.IsFlexible()
	r := 0
	for _, c := range cs {
		dst = append(dst, enc[r:c.at]...)
		dst = appendLen(dst, c.sec.Len(), flexible)
		n := int(c.sec.Len())
		dst = append(dst, make([]byte, n)...)
		if k, err := c.sec.ReadAt(dst[len(dst)-n:], 0); k < n && s.err == nil {
			s.err = fmt.Errorf("section of %d bytes: read %d: %w", n, k, err)
		}
		r = c.at + c.prefix + tokenLen
	}
	return append(dst, enc[r:]...)
}
