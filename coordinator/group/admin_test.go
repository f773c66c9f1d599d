package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeGroups(t *testing.T) {
	h := newHarness(t, nil)
	ids, _ := h.stableGroup(2)
	d := h.describe("g", "nope")
	g := d.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != "range" ||
		len(g.Members) != 2 || g.Members[0].MemberID != ids[0] || string(g.Members[1].MemberAssignment) != "\x01" ||
		g.Members[0].ClientHost != "/127.0.0.1" || g.AuthorizedOperations != -2147483648 {
		t.Fatalf("stable group: %+v", g)
	}
	if u := d.Groups[1]; u.ErrorCode != 0 || u.State != "Dead" || len(u.Members) != 0 {
		t.Fatalf("unknown group: %+v", u)
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups = 6, []string{"g", "nope"}
	h.handle("v6", req)
	d6 := h.replies["v6"].(*kmsg.DescribeGroupsResponse)
	if g := d6.Groups[0]; g.ErrorCode != 0 || g.State != "Stable" {
		t.Fatalf("v6 stable group: %+v", g)
	}
	if u := d6.Groups[1]; u.ErrorCode != kerr.GroupIDNotFound.Code || u.State != "Dead" ||
		u.ErrorMessage == nil || *u.ErrorMessage != "Group nope not found." {
		t.Fatalf("v6 unknown group: %+v", u)
	}
	h.join("j", joinOpts{member: ids[0]})
	g = h.describe("g").Groups[0]
	if g.State != "PreparingRebalance" || g.Protocol != "" || len(g.Members[0].ProtocolMetadata) != 0 {
		t.Fatalf("rebalancing group: %+v", g)
	}
}

func TestListGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.stableGroup(1)
	h.commit("c", 8, "simple", "", -1, commit{"t", 0, 1, ""})
	tests := []struct {
		name    string
		version int16
		states  []string
		types   []string
		want    []string
	}{
		{"all", 3, nil, nil, []string{"g", "simple"}},
		{"stable", 4, []string{"stable"}, nil, []string{"g"}},
		{"empty", 4, []string{"Empty", "Dead"}, nil, []string{"simple"}},
		{"filter ignored before v4", 3, []string{"Dead"}, nil, []string{"g", "simple"}},
		{"classic", 5, nil, []string{"Classic"}, []string{"g", "simple"}},
		{"consumer type", 5, nil, []string{"consumer"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			req := kmsg.NewPtrListGroupsRequest()
			req.Version = tt.version
			req.StatesFilter, req.TypesFilter = tt.states, tt.types
			h.handle(tt.name, req)
			resp := h.replies[tt.name].(*kmsg.ListGroupsResponse)
			var got []string
			for _, g := range resp.Groups {
				got = append(got, g.Group)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestDeleteGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.stableGroup(1)
	h.commit("c", 8, "simple", "", -1, commit{"t", 0, 1, ""}, commit{"u", 2, 1, ""})
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version = 2
	req.Groups = []string{"g", "simple", "nope"}
	n := len(h.records)
	h.handle("del", req)
	resp := h.replies["del"].(*kmsg.DeleteGroupsResponse)
	want := []int16{kerr.NonEmptyGroup.Code, 0, kerr.GroupIDNotFound.Code}
	for i, w := range want {
		if resp.Groups[i].ErrorCode != w {
			t.Fatalf("group %s: %d, want %d", resp.Groups[i].Group, resp.Groups[i].ErrorCode, w)
		}
	}
	if len(h.records) != n+3 {
		t.Fatalf("delete wrote %d records, want 3 tombstones", len(h.records)-n)
	}
	for _, r := range h.records[n:] {
		if r.Value != nil || r.Group != "simple" {
			t.Fatalf("record %+v", r)
		}
	}
	if s := h.state("simple"); s != "Dead" {
		t.Fatalf("state %s", s)
	}
	if got := h.fetchAll("simple"); len(got) != 0 {
		t.Fatalf("offsets survive delete: %v", got)
	}
}
