package history

import (
	"strings"
	"testing"
)

func TestCheckFindsEachAnomaly(t *testing.T) {
	tp0, tp1 := TP{"t", 0}, TP{"t", 1}
	c := New()
	var read []Record
	// p0: three records acked at 0,1,2 and read back as written.
	for i := int64(0); i < 3; i++ {
		v := c.Next("a")
		c.Acked(tp0, i, v)
		read = append(read, Record{tp0, i, v})
	}
	if rep := c.Check(read, true); rep.Err() != nil {
		t.Fatalf("clean history reported: %v", rep.Err())
	}

	for _, tc := range []struct {
		name string
		edit func([]Record) []Record
		want string
	}{
		{"lost", func(r []Record) []Record { return r[:2] }, "1 lost"},
		{"duplicated", func(r []Record) []Record { return append(r, Record{tp0, 3, r[2].Value}) }, "1 duplicated"},
		{"reordered", func(r []Record) []Record {
			r[1].Value, r[2].Value = r[2].Value, r[1].Value
			return r
		}, "reordered"},
		{"moved", func(r []Record) []Record { return append(r[:1], Record{tp1, 1, r[1].Value}, r[2]) }, "moved"},
		{"gap", func(r []Record) []Record { r[2].Offset = 5; return r }, "gaps"},
		{"unknown", func(r []Record) []Record { return append(r, Record{tp0, 3, "z/1"}) }, "1 unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := tc.edit(append([]Record(nil), read...))
			err := c.Check(edited, true).Err()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}

	// An unacknowledged send may or may not be in the log; either is fine.
	v := c.Next("a")
	if rep := c.Check(append(read, Record{tp0, 3, v}), true); rep.Err() != nil {
		t.Fatalf("unacked record present: %v", rep.Err())
	}
	// Sparse offsets are fine when dense is not asked for.
	sparse := append([]Record(nil), read...)
	sparse[2].Offset = 7
	if rep := c.Check(sparse, false); len(rep.Gaps) != 0 || len(rep.Moved) != 1 {
		t.Fatalf("sparse: %+v", rep)
	}
}
