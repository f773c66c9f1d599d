package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// tp is a topic partition.
type tp struct {
	Topic     string
	Partition int32
}

func tpString(t string, p int32) string { return fmt.Sprintf("%s-%d", t, p) }

// owner is the member a partition is assigned to.
type owner struct{ Member, Client, Host string }

// lagRow is one partition of a group, as kafka-consumer-groups.sh
// --describe shows it.
type lagRow struct {
	Topic     string
	Partition int32
	Committed int64 // -1: the group has no committed offset here
	End       int64 // high watermark; -1 unknown
	// Lag is End - Committed (never below 0), -1 when either is unknown:
	// like kafka-consumer-groups.sh, which shows "-" then.
	Lag int64
	owner
}

// lagRows joins a group's committed offsets, its members' assignments and
// the partitions' end offsets into rows sorted by topic and partition:
// every partition that is committed or assigned. total is the sum of the
// known lags.
func lagRows(committed map[tp]int64, assigned map[tp]owner, ends map[tp]int64) (rows []lagRow, total int64) {
	seen := make(map[tp]bool)
	add := func(k tp) {
		if seen[k] {
			return
		}
		seen[k] = true
		r := lagRow{Topic: k.Topic, Partition: k.Partition, Committed: -1, End: -1, Lag: -1, owner: assigned[k]}
		if o, ok := committed[k]; ok && o >= 0 {
			r.Committed = o
		}
		if e, ok := ends[k]; ok && e >= 0 {
			r.End = e
		}
		if r.Committed >= 0 && r.End >= 0 {
			r.Lag = max(r.End-r.Committed, 0)
			total += r.Lag
		}
		rows = append(rows, r)
	}
	for k := range committed {
		add(k)
	}
	for k := range assigned {
		add(k)
	}
	slices.SortFunc(rows, func(a, b lagRow) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return rows, total
}

// memberView is one member of a group with what it was assigned.
type memberView struct {
	kadm.DescribedGroupMember
	Assigned []string
}

// groupView is a group with its members and lag.
type groupView struct {
	Name, State, Protocol, ProtocolType string
	Coordinator                         int32
	Members                             []memberView
	Rows                                []lagRow
	TotalLag                            int64
	Err                                 string
}

// groupsData is the groups page.
type groupsData struct {
	Groups []groupView
	Share  []string // share groups (KIP-932): DescribeGroups does not describe them
}

// listGroups lists every group: the consumer and classic ones described
// with their lag, share groups by name only.
func listGroups(ctx context.Context, adm *kadm.Client) (groupsData, error) {
	var d groupsData
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return d, err
	}
	var names []string
	for _, g := range listed.Sorted() {
		if g.GroupType == "share" {
			d.Share = append(d.Share, g.Group)
		} else {
			names = append(names, g.Group)
		}
	}
	if len(names) > 0 {
		d.Groups, err = loadGroups(ctx, adm, names...)
	}
	return d, err
}

// loadGroups describes the named groups with their members, assignments
// and lag per partition.
func loadGroups(ctx context.Context, adm *kadm.Client, names ...string) ([]groupView, error) {
	described, err := adm.DescribeGroups(ctx, names...)
	if err != nil && len(described) == 0 {
		return nil, err
	}
	errs := []error{err}
	fetched := adm.FetchManyOffsets(ctx, names...)
	topics := make(map[string]bool)
	for _, f := range fetched {
		for t := range f.Fetched {
			topics[t] = true
		}
	}
	for _, t := range described.AssignedPartitions().Topics() {
		topics[t] = true
	}
	ends := make(map[tp]int64)
	if len(topics) > 0 {
		listed, err := adm.ListEndOffsets(ctx, slicesOf(topics)...)
		errs = append(errs, err)
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				ends[tp{o.Topic, o.Partition}] = o.Offset
			}
		})
	}
	var out []groupView
	for _, name := range names {
		d := described[name]
		g := groupView{Name: name, State: d.State, Protocol: d.Protocol, ProtocolType: d.ProtocolType, Coordinator: d.Coordinator.NodeID}
		var gerrs []error
		if d.Err != nil {
			gerrs = append(gerrs, d.Err)
		}
		assigned := make(map[tp]owner)
		for _, m := range d.Members {
			mv := memberView{DescribedGroupMember: m}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						assigned[tp{t.Topic, p}] = owner{m.MemberID, m.ClientID, m.ClientHost}
						mv.Assigned = append(mv.Assigned, tpString(t.Topic, p))
					}
				}
			}
			g.Members = append(g.Members, mv)
		}
		committed := make(map[tp]int64)
		if f, ok := fetched[name]; ok {
			if f.Err != nil {
				gerrs = append(gerrs, f.Err)
			}
			f.Fetched.Each(func(o kadm.OffsetResponse) {
				if o.Err == nil {
					committed[tp{o.Topic, o.Partition}] = o.At
				}
			})
		}
		g.Rows, g.TotalLag = lagRows(committed, assigned, ends)
		if e := errors.Join(gerrs...); e != nil {
			g.Err = e.Error()
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b groupView) int { return cmp.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

func slicesOf(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (c *Console) groups(w http.ResponseWriter, r *http.Request) {
	adm, _, err := c.admin()
	if err != nil {
		c.render(w, "groups", "Consumer groups", nil, err)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	d, err := listGroups(ctx, adm)
	c.render(w, "groups", "Consumer groups", d, err)
}

func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("group")
	adm, _, err := c.admin()
	if err != nil {
		c.render(w, "group", name, nil, err)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	gs, err := loadGroups(ctx, adm, name)
	if len(gs) != 1 {
		c.render(w, "group", name, nil, errors.Join(err, errors.New("no such group")))
		return
	}
	c.render(w, "group", name, gs[0], err)
}
