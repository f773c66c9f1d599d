package consumer

import (
	"sort"
)

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id         string
	instanceID *string
	// topics are the existing topics the member subscribes to, sorted by
	// name.
	topics []TopicInfo
}

// assign computes a target assignment for members with the named assignor
// ("uniform" or "range"; anything else is treated as "uniform"). prev is
// the current target assignment, which "uniform" keeps as far as balance
// allows. Every member gets an entry, possibly empty.
//
// Invariants of the result: each partition of a topic some member
// subscribes to is assigned to exactly one member subscribed to that topic;
// no other partition is assigned.
func assign(name string, members []assignMember, prev map[string]assignment) map[string]assignment {
	if name == RangeAssignor {
		return assignRange(members)
	}
	return assignUniform(members, prev)
}

// assignRange is Kafka's server-side RangeAssignor: members are ordered
// static members first (by instance id), then the others by member id; for
// each topic, its subscribers in that order get contiguous ranges, the
// first numPartitions % numSubscribers of them one partition more. When
// all subscribed topics have the same partition count, members get the same
// partition numbers of every topic (co-partitioning).
func assignRange(members []assignMember) map[string]assignment {
	order := make([]assignMember, len(members))
	copy(order, members)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i].instanceID, order[j].instanceID
		switch {
		case a != nil && b != nil:
			if *a != *b {
				return *a < *b
			}
			return order[i].id < order[j].id
		case a != nil:
			return true
		case b != nil:
			return false
		}
		return order[i].id < order[j].id
	})
	type cursor struct {
		partitions, subscribers int32
		minQuota, extra, next   int32
	}
	cursors := make(map[uuid]*cursor)
	for _, m := range order {
		for _, t := range m.topics {
			c := cursors[t.ID]
			if c == nil {
				c = &cursor{partitions: t.Partitions}
				cursors[t.ID] = c
			}
			c.subscribers++
		}
	}
	for _, c := range cursors {
		c.minQuota = c.partitions / c.subscribers
		c.extra = c.partitions % c.subscribers
	}
	out := make(map[string]assignment, len(order))
	for _, m := range order {
		a := make(assignment)
		for _, t := range m.topics {
			c := cursors[t.ID]
			quota := c.minQuota
			if c.extra > 0 {
				quota++
				c.extra--
			}
			end := min(c.next+quota, c.partitions)
			for p := c.next; p < end; p++ {
				a[t.ID] = append(a[t.ID], p)
			}
			c.next = end
		}
		out[m.id] = a
	}
	return out
}

// tp is one topic partition.
type tp struct {
	topic uuid
	part  int32
}

// assignUniform is a sticky, balanced assignor in the spirit of Kafka's
// UniformAssignor: every member keeps as much of its previous target as
// balance allows, and the rest goes to the least loaded subscribers.
//
// With homogeneous subscriptions (all members subscribe to the same
// topics) each member ends with floor(P/N) or ceil(P/N) partitions. With
// heterogeneous subscriptions partitions move from a member to a
// subscriber of the same topic holding at least two fewer, until no such
// move exists.
func assignUniform(members []assignMember, prev map[string]assignment) map[string]assignment {
	order := make([]assignMember, len(members))
	copy(order, members)
	sort.Slice(order, func(i, j int) bool { return order[i].id < order[j].id })

	out := make(map[string]assignment, len(order))
	subscribed := make([]map[uuid]bool, len(order))
	topics := make(map[uuid]TopicInfo)
	subscribers := make(map[uuid][]int)
	for i, m := range order {
		out[m.id] = make(assignment)
		subscribed[i] = make(map[uuid]bool, len(m.topics))
		for _, t := range m.topics {
			subscribed[i][t.ID] = true
			topics[t.ID] = t
			subscribers[t.ID] = append(subscribers[t.ID], i)
		}
	}
	if len(order) == 0 {
		return out
	}
	// All partitions, topics by name, partitions ascending.
	topicOrder := make([]TopicInfo, 0, len(topics))
	for _, t := range topics {
		topicOrder = append(topicOrder, t)
	}
	sort.Slice(topicOrder, func(i, j int) bool { return topicOrder[i].Name < topicOrder[j].Name })
	var all []tp
	for _, t := range topicOrder {
		for p := int32(0); p < t.Partitions; p++ {
			all = append(all, tp{t.ID, p})
		}
	}

	// Keep previous targets that are still valid.
	owner := make(map[tp]int, len(all))
	count := make([]int, len(order))
	retained := make([][]tp, len(order))
	for i, m := range order {
		pa := prev[m.id]
		for _, t := range pa.topics() {
			info, ok := topics[t]
			if !ok || !subscribed[i][t] {
				continue
			}
			for _, p := range pa[t] {
				k := tp{t, p}
				if _, taken := owner[k]; taken || p >= info.Partitions {
					continue
				}
				owner[k] = i
				retained[i] = append(retained[i], k)
				count[i]++
			}
		}
	}

	homogeneous := true
	for i := 1; i < len(order) && homogeneous; i++ {
		homogeneous = len(subscribed[i]) == len(subscribed[0])
		for t := range subscribed[i] {
			if !subscribed[0][t] {
				homogeneous = false
				break
			}
		}
	}
	if homogeneous {
		// Trim every member to its quota before handing out the rest.
		n := len(order)
		minQuota, extra := len(all)/n, len(all)%n
		for i := range order {
			quota := minQuota
			if count[i] > minQuota && extra > 0 {
				quota++
				extra--
			}
			for _, k := range retained[i][min(quota, len(retained[i])):] {
				delete(owner, k)
			}
			count[i] = min(count[i], quota)
		}
	}
	// Hand out free partitions, each to its least loaded subscriber.
	for _, k := range all {
		if _, taken := owner[k]; taken {
			continue
		}
		best := -1
		for _, i := range subscribers[k.topic] {
			if best < 0 || count[i] < count[best] {
				best = i
			}
		}
		owner[k] = best
		count[best]++
	}
	// Balance: move a partition from a member to a subscriber of its
	// topic with at least two fewer partitions. Each move lowers the sum
	// of squared counts, so the loop ends; it does nothing for homogeneous
	// subscriptions, which are balanced already.
	for moved := true; moved; {
		moved = false
		for idx := len(all) - 1; idx >= 0; idx-- {
			k := all[idx]
			from := owner[k]
			to := -1
			for _, i := range subscribers[k.topic] {
				if count[i] < count[from]-1 && (to < 0 || count[i] < count[to]) {
					to = i
				}
			}
			if to >= 0 {
				owner[k] = to
				count[from]--
				count[to]++
				moved = true
			}
		}
	}
	for _, k := range all {
		out[order[owner[k]].id].add(k.topic, k.part)
	}
	return out
}
