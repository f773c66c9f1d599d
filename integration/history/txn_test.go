package history

import (
	"strings"
	"testing"
)

var (
	p0 = TP{"t", 0}
	p1 = TP{"t", 1}
)

// txn begins a transaction of producer writing one record to each of tps
// and ends it with o; it returns the id and the values.
func txn(c *TxnChecker, producer string, o Outcome, tps ...TP) (string, []string) {
	id := c.Begin(producer)
	var vs []string
	for i, tp := range tps {
		vs = append(vs, c.Value(id, i, tp))
	}
	c.End(id, o)
	return id, vs
}

// TestTxnCheckerFindsEachAnomaly builds one history per anomaly and checks
// that exactly that anomaly is reported, and that a clean history reports
// none.
func TestTxnCheckerFindsEachAnomaly(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(c *TxnChecker) []Record // returns the final read
		want string                       // a substring of Err, "" for none
	}{
		{"clean", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Committed, p0, p1)
			_, _ = txn(c, "w", Aborted, p0, p1)
			c.Read("c", Record{p0, 0, a[0]})
			c.Read("c", Record{p1, 0, a[1]})
			return []Record{{p0, 0, a[0]}, {p1, 0, a[1]}}
		}, ""},
		{"aborted read", func(c *TxnChecker) []Record {
			_, b := txn(c, "w", Aborted, p0)
			c.Read("c", Record{p0, 0, b[0]})
			return nil
		}, "aborted reads"},
		{"uncommitted read", func(c *TxnChecker) []Record {
			_, b := txn(c, "w", Open, p0)
			c.Read("c", Record{p0, 0, b[0]})
			return nil
		}, "uncommitted reads"},
		{"lost committed write", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Committed, p0, p1)
			return []Record{{p0, 0, a[0]}}
		}, "lost committed writes"},
		{"fractured unknown outcome", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Unknown, p0, p1)
			return []Record{{p0, 0, a[0]}}
		}, "fractured"},
		{"unknown outcome wholly visible is fine", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Unknown, p0, p1)
			return []Record{{p0, 0, a[0]}, {p1, 0, a[1]}}
		}, ""},
		{"non-monotonic", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Committed, p0)
			_, b := txn(c, "w", Committed, p0)
			c.Read("c", Record{p0, 0, a[0]})
			c.Read("c", Record{p0, 1, b[0]})
			c.Read("c", Record{p0, 0, a[0]})
			return []Record{{p0, 0, a[0]}, {p0, 1, b[0]}}
		}, "non-monotonic"},
		{"going back after a restart is fine", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Committed, p0)
			c.Read("c", Record{p0, 0, a[0]})
			c.Restart("c")
			c.Read("c", Record{p0, 0, a[0]})
			return []Record{{p0, 0, a[0]}}
		}, ""},
		{"duplicate", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Committed, p0)
			return []Record{{p0, 0, a[0]}, {p0, 1, a[0]}}
		}, "duplicated"},
		{"processed twice", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Committed, p0)
			var final []Record
			for i := range 2 {
				pid := c.Begin("p")
				pv := c.Value(pid, 0, p1)
				c.ReadIn(pid, a[0])
				c.End(pid, Committed)
				final = append(final, Record{p1, int64(i), pv})
			}
			return append(final, Record{p0, 0, a[0]})
		}, "processed twice"},
		{"reprocessed after an abort is fine", func(c *TxnChecker) []Record {
			_, a := txn(c, "w", Committed, p0)
			pid := c.Begin("p")
			_ = c.Value(pid, 0, p1)
			c.ReadIn(pid, a[0])
			c.End(pid, Aborted)
			pid = c.Begin("p")
			pv := c.Value(pid, 0, p1)
			c.ReadIn(pid, a[0])
			c.End(pid, Committed)
			return []Record{{p0, 0, a[0]}, {p1, 0, pv}}
		}, ""},
		{"a processor's aborted read", func(c *TxnChecker) []Record {
			_, b := txn(c, "w", Aborted, p0)
			pid := c.Begin("p")
			pv := c.Value(pid, 0, p1)
			c.ReadIn(pid, b[0])
			c.End(pid, Committed)
			return []Record{{p1, 0, pv}}
		}, "aborted reads"},
		{"G0 write cycle is allowed", func(c *TxnChecker) []Record {
			_, a := txn(c, "w1", Committed, p0, p1)
			_, b := txn(c, "w2", Committed, p0, p1)
			return []Record{{p0, 0, a[0]}, {p0, 1, b[0]}, {p1, 0, b[1]}, {p1, 1, a[1]}}
		}, ""},
		{"a ww path through a transaction's two partitions is no G1c", func(c *TxnChecker) []Record {
			// w2 appends to p0 before w, stalls, and appends to p1 after
			// p, which read w, wrote p1: w2 → w (p0), w → p (read),
			// p → w2 (p1) is a cycle of transactions but not of records.
			w2 := c.Begin("w2")
			w2a, w2b := c.Value(w2, 0, p0), c.Value(w2, 1, p1)
			_, a := txn(c, "w", Committed, p0, p1)
			pid := c.Begin("p")
			pv := c.Value(pid, 0, p1)
			c.ReadIn(pid, a[0])
			c.End(pid, Committed)
			c.End(w2, Committed)
			return []Record{{p0, 0, w2a}, {p0, 1, a[0]}, {p1, 0, a[1]}, {p1, 1, pv}, {p1, 2, w2b}}
		}, ""},
		{"G1c: a processor read a write that came after its own", func(c *TxnChecker) []Record {
			// p reads w's record on p0 yet p's record precedes w's on p1.
			_, a := txn(c, "w", Committed, p0, p1)
			pid := c.Begin("p")
			pv := c.Value(pid, 0, p1)
			c.ReadIn(pid, a[0])
			c.End(pid, Committed)
			return []Record{{p0, 0, a[0]}, {p1, 0, pv}, {p1, 1, a[1]}}
		}, "G1c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewTxnChecker()
			rep := c.Check(tc.run(c))
			err := rep.Err()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want no anomaly, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

// TestTxnCheckerCountsG0 checks that a pure write cycle is counted.
func TestTxnCheckerCountsG0(t *testing.T) {
	c := NewTxnChecker()
	_, a := txn(c, "w1", Committed, p0, p1)
	_, b := txn(c, "w2", Committed, p0, p1)
	rep := c.Check([]Record{{p0, 0, a[0]}, {p0, 1, b[0]}, {p1, 0, b[1]}, {p1, 1, a[1]}})
	if rep.G0 != 1 || len(rep.G1c) != 0 {
		t.Fatalf("G0 %d, G1c %v; want 1 and none", rep.G0, rep.G1c)
	}
}
