package controller

import "github.com/kbroker/kbroker/controller/zkdata"

// OnTopicChange handles a topic's assignment as read from
// /brokers/topics/<t>: a new topic, or new partitions of a known one
// (CreatePartitions). Its new partitions get their first leader.
func (m *Machine) OnTopicChange(name string, a zkdata.TopicAssignment) (Output, error) {
	return m.OnTopicChanges([]string{name}, []zkdata.TopicAssignment{a})
}

// OnTopicChanges is OnTopicChange of several topics in one decision (as
// Kafka's TopicChange handles every new topic of one watch event): their
// new partitions' states are written together and each broker gets one
// LeaderAndIsr and one UpdateMetadata for all of them.
func (m *Machine) OnTopicChanges(names []string, as []zkdata.TopicAssignment) (Output, error) {
	c := m.Ctx
	s := m.begin()
	var added []TopicPartition
	for i, name := range names {
		a := as[i]
		t, known := c.Topics[name]
		var fresh []TopicPartition
		if !known {
			c.AddTopic(name, a)
			for _, p := range a.PartitionIDs() {
				fresh = append(fresh, TopicPartition{Topic: name, Partition: p})
			}
		} else {
			for _, p := range a.PartitionIDs() {
				if _, ok := t.Partitions[p]; !ok {
					t.Partitions[p] = Assignment{Replicas: a.Partitions[p], Adding: a.AddingReplicas[p], Removing: a.RemovingReplicas[p]}
					fresh = append(fresh, TopicPartition{Topic: name, Partition: p})
				}
			}
		}
		for _, tp := range fresh {
			if err := c.movePartition(tp, PartitionNew); err != nil {
				s.problem(err)
				continue
			}
			ta, _ := c.Assignment(tp)
			for _, r := range ta.Replicas {
				if err := c.moveReplica(PartitionReplica{tp, r}, ReplicaNew); err != nil {
					s.problem(err)
				}
			}
		}
		added = append(added, fresh...)
	}
	if err := s.initialize(added); err != nil {
		return Output{}, err
	}
	return s.finish(), nil
}

// OnTopicDeletion queues topics from /admin/delete_topics and deletes every
// queued topic whose replicas are all on live brokers. A name that is not a
// topic is returned in DeletedTopics at once, so its marker is removed.
func (m *Machine) OnTopicDeletion(names []string) Output {
	c := m.Ctx
	s := m.begin()
	for _, n := range names {
		if _, ok := c.Topics[n]; !ok {
			s.out.DeletedTopics = append(s.out.DeletedTopics, n)
			continue
		}
		c.Deleting[n] = true
	}
	s.deleteTopics()
	return s.finish()
}

// deleteTopics deletes the queued topics it can: the live brokers learn the
// topic is going (leader -2 in UpdateMetadata), every replica gets
// StopReplica with delete, and the topic leaves the context. A topic with
// a replica on a dead broker waits (ReplicaDeletionIneligible) until that
// broker returns, as in Kafka.
func (s *step) deleteTopics() {
	c := s.m.Ctx
	var names []string
	for n := range c.Deleting {
		names = append(names, n)
	}
	sortStrings(names)
	for _, n := range names {
		t := c.Topics[n]
		if t == nil {
			delete(c.Deleting, n)
			continue
		}
		eligible := true
		for _, a := range t.Partitions {
			for _, r := range a.Replicas {
				if !c.IsLive(r) {
					eligible = false
				}
			}
		}
		tps := c.PartitionsOfTopic(n)
		if !eligible {
			for _, tp := range tps {
				a, _ := c.Assignment(tp)
				for _, r := range a.Replicas {
					pr := PartitionReplica{tp, r}
					if c.Replicas[pr] == ReplicaOnline || c.Replicas[pr] == ReplicaNew {
						c.Replicas[pr] = ReplicaOffline
					}
					if ValidReplicaTransition(c.Replicas[pr], ReplicaDeletionIneligible) {
						c.Replicas[pr] = ReplicaDeletionIneligible
					}
				}
			}
			continue
		}
		s.batch.UpdateMetadata(c, c.LiveIDs(), tps...)
		for _, tp := range tps {
			a, _ := c.Assignment(tp)
			for _, r := range a.Replicas {
				s.batch.StopReplica(c, r, tp, true)
			}
		}
		// The requests are built from the context now, while the topic is
		// still in it; then it goes.
		s.out.Sends = append(s.out.Sends, s.batch.Build(c)...)
		s.batch = NewBatch()
		c.RemoveTopic(n)
		s.out.DeletedTopics = append(s.out.DeletedTopics, n)
	}
}

// PartitionsOfTopic returns a topic's partitions in order.
func (c *Context) PartitionsOfTopic(name string) []TopicPartition {
	t := c.Topics[name]
	if t == nil {
		return nil
	}
	out := make([]TopicPartition, 0, len(t.Partitions))
	for p := range t.Partitions {
		out = append(out, TopicPartition{Topic: name, Partition: p})
	}
	sortTPs(out)
	return out
}
