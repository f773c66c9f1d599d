package protocol

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// memSection is a Section over bytes in memory.
type memSection struct {
	b        []byte
	released int
}

func (m *memSection) Len() int64 { return int64(len(m.b)) }
func (m *memSection) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(m.b)
	return int64(n), err
}
func (m *memSection) File() (*os.File, int64, bool)           { return nil, 0, false }
func (m *memSection) Release()                                { m.released++ }
func (m *memSection) ReadAt(p []byte, off int64) (int, error) { return copy(p, m.b[off:]), nil }

// fetchResponse builds a Fetch response with every kind of partition: file
// records (each a different size, so length prefixes of 1 to 3 bytes
// occur), records in memory, empty and null record sets, errors, aborted
// transactions and, where the version has them, tagged fields.
func fetchResponse(version int16, records func(i int, b []byte) []byte) *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.SetVersion(version)
	r.ThrottleMillis = 7
	r.SessionID = 42
	sizes := []int{1, 61, 126, 127, 128, 300, 16383, 16384, 70000}
	i := 0
	for ti := 0; ti < 3; ti++ {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = string(rune('a'+ti)) + "-topic"
		rt.TopicID[0] = byte(ti + 1)
		for pi := 0; pi < 5; pi++ {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(pi)
			rp.HighWatermark = int64(1000 + i)
			rp.LastStableOffset = int64(900 + i)
			rp.LogStartOffset = int64(i)
			rp.PreferredReadReplica = -1
			switch pi {
			case 0, 1, 3:
				b := bytes.Repeat([]byte{byte(i + 1)}, sizes[i%len(sizes)])
				rp.RecordBatches = records(i, b)
			case 2:
				rp.RecordBatches = []byte{}
				rp.ErrorCode = 1
			case 4:
				rp.RecordBatches = nil
				a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				a.ProducerID, a.FirstOffset = 5, 6
				rp.AbortedTransactions = append(rp.AbortedTransactions, a)
			}
			if pi == 1 {
				rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = 3, 4
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = 1, 2
			}
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	ep := kmsg.NewFetchResponseBroker()
	ep.NodeID, ep.Host, ep.Port = 1, "localhost", 9092
	r.Brokers = append(r.Brokers, ep)
	return r
}

// TestSplicedFrameMatchesKmsg: for every Fetch version, the spliced frame
// (heads with the sections' bytes between them) and the spliced AppendTo
// are byte for byte kmsg's encoding of the same response with the records
// in memory.
func TestSplicedFrameMatchesKmsg(t *testing.T) {
	for v := int16(0); v <= kmsg.NewPtrFetchResponse().MaxVersion(); v++ {
		plain := fetchResponse(v, func(_ int, b []byte) []byte { return b })
		want := AppendResponse(nil, 99, plain)

		var secs []*memSection
		spl := NewSpliced(nil)
		spl.Response = fetchResponse(v, func(i int, b []byte) []byte {
			if i%3 == 1 {
				return b // some records stay in memory
			}
			s := &memSection{b: b}
			secs = append(secs, s)
			return spl.Add(s)
		})

		if got := AppendResponse(nil, 99, spl); !bytes.Equal(got, want) {
			t.Fatalf("v%d: AppendTo differs from kmsg's encoding (%d vs %d bytes)", v, len(got), len(want))
		}
		if spl.Err() != nil {
			t.Fatalf("v%d: %v", v, spl.Err())
		}
		_, heads, ss, err := spl.Frame(make([]byte, 0, 16), 99)
		if err != nil {
			t.Fatalf("v%d: Frame: %v", v, err)
		}
		if len(heads) != len(ss)+1 || len(ss) != len(secs) {
			t.Fatalf("v%d: %d heads, %d sections, want %d sections", v, len(heads), len(ss), len(secs))
		}
		var got bytes.Buffer
		for i, h := range heads {
			got.Write(h)
			if i < len(ss) {
				if _, err := ss[i].WriteTo(&got); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("v%d: spliced frame differs from kmsg's encoding (%d vs %d bytes)", v, got.Len(), len(want))
		}
		spl.Release()
		spl.Release()
		for i, s := range secs {
			if s.released != 1 {
				t.Fatalf("v%d: section %d released %d times", v, i, s.released)
			}
		}
	}
}

// TestSplicedLookup: placeholders resolve to their sections and nothing
// else does; Reset forgets them.
func TestSplicedLookup(t *testing.T) {
	spl := NewSpliced(kmsg.NewPtrFetchResponse())
	s := &memSection{b: make([]byte, 1000)}
	tok := spl.Add(s)
	if got, ok := spl.Lookup(tok); !ok || got != s || spl.FieldLen(tok) != 1000 {
		t.Fatalf("Lookup of a placeholder: %v %v, FieldLen %d", got, ok, spl.FieldLen(tok))
	}
	other := append([]byte(nil), tok...)
	other[15]++
	for _, b := range [][]byte{nil, {1, 2, 3}, other, make([]byte, tokenLen)} {
		if _, ok := spl.Lookup(b); ok || spl.FieldLen(b) != int64(len(b)) {
			t.Fatalf("Lookup(%x) resolved", b)
		}
	}
	spl.Reset()
	if _, ok := spl.Lookup(tok); ok || s.released != 1 {
		t.Fatalf("after Reset: resolved %v, released %d", ok, s.released)
	}
	var nilSpl *Spliced
	if nilSpl.FieldLen(tok) != tokenLen {
		t.Fatal("nil Spliced resolved a placeholder")
	}
}

// BenchmarkFetchEncode encodes a Fetch v16 answer of 4 partitions × 4 MiB
// of records: kmsg's encoding with the records in memory (what the
// connection wrote before sendfile), and the spliced frame, the user-space
// work left when sendfile carries the records.
func BenchmarkFetchEncode(b *testing.B) {
	const parts, size = 4, 4 << 20
	build := func(records func(b []byte) []byte) *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.SetVersion(16)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		for i := range parts {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(i)
			rp.RecordBatches = records(make([]byte, size))
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
		return r
	}
	b.Run("kmsg", func(b *testing.B) {
		r := build(func(b []byte) []byte { return b })
		b.SetBytes(parts * size)
		b.ReportAllocs()
		for range b.N {
			_ = AppendResponse(nil, 1, r)
		}
	})
	b.Run("spliced", func(b *testing.B) {
		spl := NewSpliced(nil)
		spl.Response = build(func(b []byte) []byte { return spl.Add(&memSection{b: b}) })
		b.SetBytes(parts * size)
		b.ReportAllocs()
		var buf []byte
		for range b.N {
			var err error
			if buf, _, _, err = spl.Frame(buf, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSplicedThrottle: quotas set and read a Fetch answer's throttle
// through the wrapper.
func TestSplicedThrottle(t *testing.T) {
	r := kmsg.NewPtrFetchResponse()
	r.SetVersion(12)
	var resp kmsg.Response = NewSpliced(r)
	st, ok := resp.(kmsg.SetThrottleResponse)
	tr, ok2 := resp.(kmsg.ThrottleResponse)
	if !ok || !ok2 {
		t.Fatal("Spliced is not a throttle response")
	}
	st.SetThrottle(250)
	if ms, after := tr.Throttle(); ms != 250 || !after || r.ThrottleMillis != 250 {
		t.Fatalf("Throttle() = %d, %v; inner %d", ms, after, r.ThrottleMillis)
	}
}
