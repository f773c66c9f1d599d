package api

// The delayed admin operations of cluster mode, as Kafka's ZooKeeper-mode
// purgatories: a topic admin request written to ZooKeeper is answered once
// this broker's metadata cache shows its result, so a client that creates
// a topic and at once asks this broker for its metadata, or produces to
// it, finds it ready.
//
//   - CreateTopics and CreatePartitions (DelayedCreatePartitions) wait until
//     every new partition has a leader in the cache;
//   - DeleteTopics (DelayedDeleteTopics) waits until the topic has left it.
//
// Each answers REQUEST_TIMED_OUT (no message) for the topics still pending
// when the request's timeout_ms runs out, and does not wait at all when
// timeout_ms ≤ 0, validate_only is set or nothing succeeded. The wait is
// woken by the cache's updates (metacache.Snapshot.Replaced), not polled.
//
// What does not wait, as in Kafka 3.9: AlterConfigs and
// IncrementalAlterConfigs (answered once ZooKeeper holds the change; the
// brokers apply it from the /config/changes notification), CreateAcls and
// DeleteAcls (likewise, through /kafka-acl-changes), AlterClientQuotas,
// AlterPartitionReassignments (answered once the reassignment is written;
// ListPartitionReassignments shows its progress) and ElectLeaders (answered
// by the controller once the election is written and sent).

import (
	"time"

	"github.com/kbroker/kbroker/broker/metacache"
)

// awaitCache waits until ready holds for the metadata cache, timeout
// passes or the broker closes, and reports whether ready held. ready must
// not block; it sees one snapshot per call.
func (b *API) awaitCache(timeout time.Duration, ready func(*metacache.Snapshot) bool) bool {
	cache := b.cluster.Cache
	if s := cache.Snapshot(); ready(s) || timeout <= 0 {
		return ready(s)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s := cache.Snapshot()
		if ready(s) {
			return true
		}
		select {
		case <-s.Replaced():
		case <-timer.C:
			return ready(cache.Snapshot())
		case <-b.closing:
			return false
		}
	}
}

// partitionRange is the partitions [from, to) of one topic an admin
// request created; id is the topic's id when known (zero: any).
type partitionRange struct {
	id       [16]byte
	from, to int32
}

// leadersElected reports whether every partition of each range has a
// leader in s (Kafka's isMissingLeader: absent or leader -1 is missing).
func leadersElected(s *metacache.Snapshot, topic string, r partitionRange) bool {
	t := s.Topics[topic]
	if t == nil || (r.id != ([16]byte{}) && t.ID != ([16]byte{}) && t.ID != r.id) {
		return false
	}
	for p := r.from; p < r.to; p++ {
		if st, ok := t.Partitions[p]; !ok || st.Leader < 0 {
			return false
		}
	}
	return true
}

// awaitPartitions waits for the leaders of created partitions and returns
// the topics still without one.
func (b *API) awaitPartitions(timeoutMs int32, created map[string]partitionRange) map[string]bool {
	if len(created) == 0 {
		return nil
	}
	ready := func(s *metacache.Snapshot) bool {
		for topic, r := range created {
			if !leadersElected(s, topic, r) {
				return false
			}
		}
		return true
	}
	if b.awaitCache(time.Duration(timeoutMs)*time.Millisecond, ready) {
		return nil
	}
	s := b.cluster.Cache.Snapshot()
	pending := map[string]bool{}
	for topic, r := range created {
		if !leadersElected(s, topic, r) {
			pending[topic] = true
		}
	}
	return pending
}

// awaitDeleted waits until the deleted topics have left the cache and
// returns those still in it.
func (b *API) awaitDeleted(timeoutMs int32, deleted []string) map[string]bool {
	if len(deleted) == 0 {
		return nil
	}
	gone := func(s *metacache.Snapshot) bool {
		for _, n := range deleted {
			if s.Topics[n] != nil {
				return false
			}
		}
		return true
	}
	if b.awaitCache(time.Duration(timeoutMs)*time.Millisecond, gone) {
		return nil
	}
	s := b.cluster.Cache.Snapshot()
	pending := map[string]bool{}
	for _, n := range deleted {
		if s.Topics[n] != nil {
			pending[n] = true
		}
	}
	return pending
}
