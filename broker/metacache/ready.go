package metacache

import (
	"fmt"
	"slices"
)

// CaughtUp reports why broker id is not yet a full member of the cluster by
// this snapshot (nil: it is): the controller has not yet listed it among the
// live brokers, or it is a replica, but not in the ISR, of partitions whose
// leader is live. Partitions without a live leader do not count: no
// follower can catch up on them. This is /readyz's cluster condition, the
// one an operator waits for before bouncing the next broker of a rolling
// restart (Kafka's "no under-replicated partitions" check, from one broker).
func (s *Snapshot) CaughtUp(id int32) error {
	if _, ok := s.Brokers[id]; !ok {
		return fmt.Errorf("broker %d not yet among the live brokers the controller announced", id)
	}
	n, first := 0, ""
	for _, name := range s.TopicNames() {
		t := s.Topics[name]
		for p, st := range t.Partitions {
			if st.Leader < 0 || st.Leader == id || !slices.Contains(st.Replicas, id) || slices.Contains(st.ISR, id) {
				continue
			}
			if _, live := s.Brokers[st.Leader]; !live {
				continue
			}
			if n++; first == "" {
				first = fmt.Sprintf("%s-%d", name, p)
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("broker %d is catching up: not yet in the ISR of %d partitions (%s first)", id, n, first)
	}
	return nil
}
