package consumer

import (
	"bytes"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// uuid is a Kafka topic id.
type uuid = [16]byte

// assignment is a set of partitions by topic id.
//
// Invariant: every slice is sorted ascending, has no duplicates and is not
// empty; a topic without partitions has no entry. All functions here keep
// it and return fresh maps (assignments are values, never shared).
type assignment map[uuid][]int32

// newAssignment builds a normalised assignment from possibly unsorted,
// duplicated input (a heartbeat's owned partitions, a decoded record).
func newAssignment(add func(put func(uuid, int32))) assignment {
	a := make(assignment)
	add(func(t uuid, p int32) { a[t] = append(a[t], p) })
	for t, ps := range a {
		slices.Sort(ps)
		a[t] = slices.Compact(ps)
	}
	return a
}

// fromOwned converts the TopicPartitions of a heartbeat; nil stays nil
// (Kafka's "unchanged since the last heartbeat").
func fromOwned(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) assignment {
	if ts == nil {
		return nil
	}
	return newAssignment(func(put func(uuid, int32)) {
		for _, t := range ts {
			for _, p := range t.Partitions {
				put(t.TopicID, p)
			}
		}
	})
}

func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

func (a assignment) contains(t uuid, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// intersects reports whether a and b share a partition.
func (a assignment) intersects(b assignment) bool {
	for t, ps := range a {
		for _, p := range ps {
			if b.contains(t, p) {
				return true
			}
		}
	}
	return false
}

// subsetOf reports whether every partition of a is in b.
func (a assignment) subsetOf(b assignment) bool {
	for t, ps := range a {
		for _, p := range ps {
			if !b.contains(t, p) {
				return false
			}
		}
	}
	return true
}

// topics returns the topic ids in byte order, for deterministic output.
func (a assignment) topics() []uuid {
	ts := make([]uuid, 0, len(a))
	for t := range a {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i][:], ts[j][:]) < 0 })
	return ts
}

// add inserts partition p of topic t.
func (a assignment) add(t uuid, p int32) {
	ps := a[t]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		a[t] = slices.Insert(ps, i, p)
	}
}

// remove deletes partition p of topic t.
func (a assignment) remove(t uuid, p int32) {
	ps := a[t]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		return
	}
	ps = slices.Delete(ps, i, i+1)
	if len(ps) == 0 {
		delete(a, t)
		return
	}
	a[t] = ps
}

// toResponse converts to the Assignment of a heartbeat response.
func (a assignment) toResponse() *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range a.topics() {
		rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		rt.TopicID = t
		rt.Partitions = slices.Clone(a[t])
		out.Topics = append(out.Topics, rt)
	}
	return &out
}
