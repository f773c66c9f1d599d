package history

import (
	"strings"
	"testing"
)

// TestGroupCheckerFindsEachAnomaly builds one group history per anomaly
// and checks that it is reported, and that a clean history reports none.
func TestGroupCheckerFindsEachAnomaly(t *testing.T) {
	acked := []Record{{p0, 0, "a"}, {p0, 1, "b"}, {p0, 2, "c"}}
	for _, tc := range []struct {
		name  string
		run   func(g *GroupChecker)
		final map[TP]int64
		want  string
	}{
		{"clean handover", func(g *GroupChecker) {
			g.Assigned("m1", p0)
			g.Polled("m1", acked[0])
			g.Polled("m1", acked[1])
			g.Committed("m1", g.CommitSent(), map[TP]int64{p0: 2})
			g.Revoked("m1", p0)
			g.Assigned("m2", p0)
			g.Polled("m2", acked[2])
			g.Committed("m2", g.CommitSent(), map[TP]int64{p0: 3})
		}, map[TP]int64{p0: 3}, ""},
		{"redelivery after a failed commit is fine", func(g *GroupChecker) {
			g.Assigned("m1", p0)
			g.Polled("m1", acked[0])
			g.Committed("m1", g.CommitSent(), nil) // failed
			g.Assigned("m2", p0)
			g.Polled("m2", acked[0])
		}, map[TP]int64{p0: 0}, ""},
		{"new owner below the committed offset", func(g *GroupChecker) {
			g.Assigned("m1", p0)
			g.Polled("m1", acked[0])
			g.Polled("m1", acked[1])
			g.Committed("m1", g.CommitSent(), map[TP]int64{p0: 2})
			g.Assigned("m2", p0)
			g.Polled("m2", acked[0])
		}, map[TP]int64{p0: 2}, "below the committed"},
		{"commit moved back", func(g *GroupChecker) {
			g.Assigned("m1", p0)
			g.Polled("m1", acked[0])
			g.Polled("m1", acked[1])
			g.Committed("m1", g.CommitSent(), map[TP]int64{p0: 2})
			g.Committed("m1", g.CommitSent(), map[TP]int64{p0: 1})
		}, map[TP]int64{p0: 1}, "moved back"},
		{"skipped", func(g *GroupChecker) {
			g.Assigned("m1", p0)
			g.Polled("m1", acked[0])
			g.Polled("m1", acked[2])
			g.Committed("m1", g.CommitSent(), map[TP]int64{p0: 3})
		}, map[TP]int64{p0: 3}, "skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroupChecker()
			tc.run(g)
			err := g.Check(acked, tc.final).Err()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want no anomaly, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}
