package storage

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// sectionBytes reads a section both ways (ReadAt and WriteTo), checks they
// agree, and releases it.
func sectionBytes(t *testing.T, s *Section) []byte {
	t.Helper()
	if s == nil {
		return nil
	}
	defer s.Release()
	a := make([]byte, s.Len())
	if n, err := s.ReadAt(a, 0); n != len(a) {
		t.Fatalf("ReadAt %d of %d: %v", n, len(a), err)
	}
	var b bytes.Buffer
	if n, err := s.WriteTo(&b); err != nil || n != s.Len() {
		t.Fatalf("WriteTo %d of %d: %v", n, s.Len(), err)
	}
	if !bytes.Equal(a, b.Bytes()) {
		t.Fatal("ReadAt and WriteTo disagree")
	}
	return a
}

// TestReadSectionMatchesRead: for every offset, byte budget, bound and
// minOneBatch, ReadSection covers exactly the bytes Read returns, over
// several segments, on the OS and the in-memory file system.
func TestReadSectionMatchesRead(t *testing.T) {
	for _, fsName := range []string{"os", "mem"} {
		t.Run(fsName, func(t *testing.T) {
			cfg := Config{SegmentBytes: 1500, IndexIntervalBytes: 300}
			if fsName == "mem" {
				cfg.FS = vfs.NewMem()
			}
			l, _ := openLog(t, cfg)
			// Batches of 1..4 records of 10..400 bytes, rolling segments.
			for i := 0; i < 30; i++ {
				mustAppend(t, l, 0, batchOf(1+i%4, int64(i), 10+(i*37)%390))
			}
			if err := l.SetLogStartOffset(3); err != nil {
				t.Fatal(err)
			}
			leo := l.LogEndOffset()
			for off := int64(3); off <= leo; off++ {
				for _, maxBytes := range []int{0, 50, 400, 1000, 1 << 20} {
					for _, maxOffset := range []int64{off, off + 3, leo} {
						for _, minOne := range []bool{false, true} {
							want, err := l.Read(off, maxBytes, maxOffset, minOne)
							if err != nil {
								t.Fatalf("Read(%d, %d, %d, %v): %v", off, maxBytes, maxOffset, minOne, err)
							}
							sec, err := l.ReadSection(off, maxBytes, maxOffset, minOne)
							if err != nil {
								t.Fatalf("ReadSection(%d, %d, %d, %v): %v", off, maxBytes, maxOffset, minOne, err)
							}
							if (sec == nil) != (len(want) == 0) {
								t.Fatalf("ReadSection(%d, %d, %d, %v): section %v, Read %d bytes", off, maxBytes, maxOffset, minOne, sec != nil, len(want))
							}
							if sec != nil {
								if _, _, ok := sec.File(); ok != (fsName == "os") {
									t.Fatalf("File() ok %v on %s", ok, fsName)
								}
							}
							if got := sectionBytes(t, sec); !bytes.Equal(got, want) {
								t.Fatalf("ReadSection(%d, %d, %d, %v): %d bytes, Read %d", off, maxBytes, maxOffset, minOne, len(got), len(want))
							}
						}
					}
				}
			}
			for _, off := range []int64{0, leo + 1} {
				if _, err := l.ReadSection(off, 100, leo, true); !errors.Is(err, ErrOffsetOutOfRange) {
					t.Fatalf("ReadSection(%d): %v, want ErrOffsetOutOfRange", off, err)
				}
			}
		})
	}
}

// TestSectionSurvivesRetentionAndEviction: a section pins its segment's
// descriptor; deleting the segment (retention) or churning the descriptor
// cache does not close it, so its bytes stay readable until Release, after
// which the descriptor is gone.
func TestSectionSurvivesRetentionAndEviction(t *testing.T) {
	files := newFileCache(vfs.Default, 1)
	l, _ := openLog(t, Config{SegmentBytes: 200, files: files})
	for i := 0; i < 10; i++ {
		mustAppend(t, l, 0, batchOf(1, 1, 150))
	}
	want, err := l.Read(0, 1<<20, 10, true)
	if err != nil || len(want) == 0 {
		t.Fatalf("Read: %d bytes, %v", len(want), err)
	}
	sec, err := l.ReadSection(0, 1<<20, 10, true)
	if err != nil || sec == nil {
		t.Fatalf("ReadSection: %v", err)
	}
	// Other segments' reads churn the one-descriptor cache.
	for off := int64(1); off < 9; off++ {
		if _, err := l.Read(off, 1<<20, 10, true); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := l.ApplyRetention(time.Now(), -1, 0); err != nil || n == 0 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	if l.LogStartOffset() == 0 {
		t.Fatal("segment 0 not deleted")
	}
	before := files.openCount()
	if got := sectionBytes(t, sec); !bytes.Equal(got, want) { // releases
		t.Fatalf("section after delete: %d bytes, want %d", len(got), len(want))
	}
	if after := files.openCount(); after != before-1 {
		t.Fatalf("descriptors %d after release, want %d", after, before-1)
	}
	sec.Release() // a second release changes nothing
	if after := files.openCount(); after != before-1 {
		t.Fatalf("descriptors %d after second release, want %d", after, before-1)
	}
}

// TestSectionShortFile: a range whose file was cut short is an error,
// never fewer bytes than its length.
func TestSectionShortFile(t *testing.T) {
	l, _ := openLog(t, Config{})
	mustAppend(t, l, 0, batchOf(2, 1, 100))
	sec, err := l.ReadSection(0, 1<<20, 2, true)
	if err != nil || sec == nil {
		t.Fatalf("ReadSection: %v", err)
	}
	defer sec.Release()
	if err := sec.f.Truncate(sec.Len() - 10); err != nil {
		t.Fatal(err)
	}
	if _, err := sec.WriteTo(io.Discard); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("WriteTo of a cut file: %v, want io.ErrUnexpectedEOF", err)
	}
}

// BenchmarkReadFetch reads 16 MiB from offset 0 as a fetch does: copied
// into memory (Read, the path before sendfile) and as a pinned range
// (ReadSection), of 1 MiB batches (a busy producer's) and of 16 KiB ones
// (where finding the batch boundaries costs the most).
func BenchmarkReadFetch(b *testing.B) {
	for _, c := range []struct {
		name          string
		batches, recs int
	}{{"1MiB", 16, 64}, {"16KiB", 1024, 1}} {
		l, _ := openLog(b, Config{})
		for range c.batches {
			if _, err := l.Append(batchOf(c.recs, 1, 16<<10), 0); err != nil {
				b.Fatal(err)
			}
		}
		leo := l.LogEndOffset()
		b.Run(c.name+"/copy", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				d, err := l.Read(0, 16<<20+1<<20, leo, true)
				if err != nil || len(d) == 0 {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(d)))
			}
		})
		b.Run(c.name+"/section", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				s, err := l.ReadSection(0, 16<<20+1<<20, leo, true)
				if err != nil || s == nil {
					b.Fatal(err)
				}
				b.SetBytes(s.Len())
				s.Release()
			}
		})
	}
}
