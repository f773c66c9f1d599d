package consumer

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func topicInfo(name string, n int32) TopicInfo {
	return TopicInfo{Name: name, ID: topicID(name), Partitions: n}
}

// checkComplete verifies the assignor invariants: every partition of a
// subscribed topic goes to exactly one of its subscribers.
func checkComplete(t *testing.T, members []assignMember, got map[string]assignment) {
	t.Helper()
	want := make(map[tp]bool)
	subs := make(map[string]map[uuid]bool)
	for _, m := range members {
		subs[m.id] = make(map[uuid]bool)
		for _, ti := range m.topics {
			subs[m.id][ti.ID] = true
			for p := int32(0); p < ti.Partitions; p++ {
				want[tp{ti.ID, p}] = true
			}
		}
	}
	seen := make(map[tp]bool)
	for id, as := range got {
		for tid, ps := range as {
			for _, p := range ps {
				k := tp{tid, p}
				if seen[k] || !want[k] || !subs[id][tid] {
					t.Fatalf("partition %v/%d assigned wrongly to %s", tid, p, id)
				}
				seen[k] = true
			}
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%d of %d partitions assigned", len(seen), len(want))
	}
}

func TestRangeVersusUniform(t *testing.T) {
	t1, t2 := topicInfo("t1", 3), topicInfo("t2", 3)
	members := []assignMember{
		{id: "b", topics: []TopicInfo{t1, t2}},
		{id: "a", topics: []TopicInfo{t1, t2}},
	}
	rng := assign(RangeAssignor, members, nil)
	checkComplete(t, members, rng)
	// Range: co-partitioned ranges, the first member takes the extra one.
	wantAssigned(t, rng["a"], "t1:0,1 t2:0,1")
	wantAssigned(t, rng["b"], "t1:2 t2:2")

	uni := assign(UniformAssignor, members, nil)
	checkComplete(t, members, uni)
	if uni["a"].count() != 3 || uni["b"].count() != 3 {
		t.Fatalf("uniform not balanced: %v", uni)
	}

	// Static members come first in range order, by instance id.
	members[0].instanceID = kmsg.StringPtr("i")
	rng = assign(RangeAssignor, members, nil)
	wantAssigned(t, rng["b"], "t1:0,1 t2:0,1")
}

func TestUniformIsSticky(t *testing.T) {
	t1 := topicInfo("t", 9)
	members := []assignMember{{id: "a", topics: []TopicInfo{t1}}, {id: "b", topics: []TopicInfo{t1}}}
	prev := map[string]assignment{"a": asgOf("t:0,2,4,6,8"), "b": asgOf("t:1,3,5,7")}
	got := assign(UniformAssignor, members, prev)
	wantAssigned(t, got["a"], "t:0,2,4,6,8")
	wantAssigned(t, got["b"], "t:1,3,5,7")

	// A third member takes 3, and each old member gives up only what it
	// must.
	members = append(members, assignMember{id: "c", topics: []TopicInfo{t1}})
	got = assign(UniformAssignor, members, prev)
	checkComplete(t, members, got)
	for id, old := range prev {
		if n := got[id].count(); n != 3 || !got[id].subsetOf(old) {
			t.Fatalf("%s: %v from %v", id, got[id], old)
		}
	}
}

func TestUniformHeterogeneous(t *testing.T) {
	x, y := topicInfo("x", 6), topicInfo("y", 2)
	members := []assignMember{
		{id: "a", topics: []TopicInfo{x}},
		{id: "b", topics: []TopicInfo{x, y}},
		{id: "c", topics: []TopicInfo{y}},
	}
	got := assign(UniformAssignor, members, nil)
	checkComplete(t, members, got)
	counts := []int{got["a"].count(), got["b"].count(), got["c"].count()}
	for _, n := range counts {
		if n < 2 || n > 3 {
			t.Fatalf("unbalanced: %v", got)
		}
	}
	// Nobody subscribed: nothing assigned, every member present.
	got = assign(UniformAssignor, []assignMember{{id: "a"}}, nil)
	if a, ok := got["a"]; !ok || a.count() != 0 {
		t.Fatalf("empty subscription: %v", got)
	}
}

// TestAssignorChosenPerRequest checks ServerAssignor: the group uses the
// assignor most members ask for, else the first configured.
func TestAssignorChosenPerRequest(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("t1", 3)
	h.setTopic("t2", 3)
	a := &sim{id: "a", topics: []string{"t1", "t2"}, assignor: kmsg.StringPtr("range")}
	b := &sim{id: "b", topics: []string{"t1", "t2"}, assignor: kmsg.StringPtr("range")}
	h.poll(a)
	h.poll(b)
	for i := 0; i < 3; i++ {
		h.poll(a)
		h.poll(b)
		h.assertDisjoint(a, b)
	}
	wantAssigned(t, a.owned, "t1:0,1 t2:0,1")
	wantAssigned(t, b.owned, "t1:2 t2:2")
	if got := h.describe("g").Groups[0].AssignorName; got != "range" {
		t.Fatalf("assignor %q", got)
	}

	h2 := newHarness(t, func(c *Config) { c.Assignors = ParseAssignors("range, uniform") })
	h2.setTopic("t", 2)
	s := &sim{id: "a", topics: []string{"t"}}
	h2.poll(s)
	if got := h2.describe("g").Groups[0].AssignorName; got != "range" {
		t.Fatalf("default assignor %q", got)
	}
}
