// Package zkstore is controller.Store over ZooKeeper in Kafka 3.9's layout:
// what a broker in cluster mode uses where a single node uses the file
// store. Topics are /brokers/topics/<t> plus /config/topics/<t>; creating
// one assigns replicas over the registered brokers exactly as Kafka does;
// deleting one queues it in /admin/delete_topics for the controller;
// producer-id blocks come from /latest_producer_id_block and SCRAM
// credentials live in /config/users/<user> in Kafka's own string format,
// so kafka-configs.sh and kbroker read each other's.
//
// Reads go to ZooKeeper every time: the broker's hot paths use the
// metadata cache the controller's UpdateMetadata requests keep.
package zkstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// Store is a controller.Store backed by ZooKeeper. Safe for concurrent use.
type Store struct {
	zk        *zkclient.Client
	brokerID  int32
	clusterID string

	rand *lockedRand
}

// lockedRand is the random start of replica assignment, shared by callers.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Intn(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.IntN(n)
}

var _ controller.Store = (*Store)(nil)

// Open reads (or, for the first broker of a cluster, creates with
// proposedClusterID) /cluster/id and returns the store. The client stays
// the caller's: Close does not close it.
func Open(c *zkclient.Client, brokerID int32, proposedClusterID string) (*Store, error) {
	if proposedClusterID == "" {
		proposedClusterID = controller.NewClusterID()
	}
	id, err := c.ClusterID(proposedClusterID)
	if err != nil {
		return nil, err
	}
	if err := c.EnsurePersistentPaths(); err != nil {
		return nil, err
	}
	r := &lockedRand{r: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	return &Store{zk: c, brokerID: brokerID, clusterID: id, rand: r}, nil
}

// ClusterID implements controller.Store.
func (s *Store) ClusterID() string { return s.clusterID }

// Topics implements controller.Store, sorted by name. Topics that vanish
// while being read are left out.
func (s *Store) Topics() []controller.Topic {
	names, _, err := s.zk.Children(zkdata.TopicsPath)
	if err != nil {
		return nil
	}
	sort.Strings(names)
	out := make([]controller.Topic, 0, len(names))
	for _, n := range names {
		if t, ok := s.Topic(n); ok {
			out = append(out, t)
		}
	}
	return out
}

// Topic implements controller.Store. A topic queued for deletion still
// exists until the controller has deleted it, as in Kafka.
func (s *Store) Topic(name string) (controller.Topic, bool) {
	a, _, err := s.zk.TopicAssignment(name)
	if err != nil {
		return controller.Topic{}, false
	}
	cfg, err := s.zk.TopicConfig(name)
	if err != nil {
		return controller.Topic{}, false
	}
	t := controller.Topic{Name: name, ID: a.TopicID, Partitions: int32(len(a.Partitions)), Configs: cfg}
	if rs, ok := a.Partitions[0]; ok {
		t.ReplicationFactor = int16(len(rs) - len(a.AddingReplicas[0]))
	}
	if len(t.Configs) == 0 {
		t.Configs = nil
	}
	return t, true
}

// liveBrokers reads the registered brokers, sorted by id.
func (s *Store) liveBrokers() ([]controller.BrokerMetadata, error) {
	children, _, err := s.zk.Children(zkdata.BrokerIDsPath)
	if err != nil {
		return nil, fmt.Errorf("listing brokers: %w", err)
	}
	var out []controller.BrokerMetadata
	for _, ch := range children {
		id, err := zkdata.ParseBrokerID(ch)
		if err != nil {
			continue
		}
		data, _, err := s.zk.Get(zkdata.BrokerPath(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		reg, err := zkdata.DecodeBrokerRegistration(id, data)
		if err != nil {
			continue
		}
		out = append(out, controller.BrokerMetadata{ID: id, Rack: reg.Rack})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// CreateTopic implements controller.Store: replicas are assigned over the
// registered brokers (kerr.InvalidReplicationFactor when there are too
// few), then the config and assignment znodes are written; the controller
// elects the leaders.
func (s *Store) CreateTopic(t controller.Topic) error {
	brokers, err := s.liveBrokers()
	if err != nil {
		return err
	}
	assignment, err := controller.AssignReplicas(brokers, t.Partitions, t.ReplicationFactor, s.rand)
	if err != nil {
		return fmt.Errorf("topic %s: %w", t.Name, err)
	}
	return s.CreateTopicWithAssignment(t, assignment)
}

// CreateTopicWithAssignment creates a topic with replicas given by the
// client (CreateTopics with ReplicaAssignment).
func (s *Store) CreateTopicWithAssignment(t controller.Topic, assignment map[int32][]int32) error {
	id := t.ID
	if id == ([16]byte{}) {
		id = controller.NewTopicID()
	}
	err := s.zk.CreateTopic(t.Name, zkdata.TopicAssignment{TopicID: id, Partitions: assignment}, t.Configs)
	if errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("%w: %s", controller.ErrTopicExists, t.Name)
	}
	return err
}

// DeleteTopic implements controller.Store by queueing the topic for the
// controller; it disappears once every replica has been told to delete it.
func (s *Store) DeleteTopic(name string) error {
	err := s.zk.MarkTopicForDeletion(name)
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", controller.ErrUnknownTopic, name)
	}
	return err
}

// UpdateTopicConfigs implements controller.Store (with a /config/changes
// notification for the brokers).
func (s *Store) UpdateTopicConfigs(name string, configs map[string]string) error {
	if ok, _, err := s.zk.Exists(zkdata.TopicPath(name)); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: %s", controller.ErrUnknownTopic, name)
	}
	return s.zk.SetTopicConfig(name, configs)
}

// AddPartitions implements controller.Store as Kafka's
// AdminZkClient.createPartitions: the new partitions continue the
// assignment pattern from the broker that leads partition 0.
func (s *Store) AddPartitions(name string, total int32) error {
	return s.AddPartitionsWithAssignment(name, total, nil)
}

// AddPartitionsWithAssignment is AddPartitions with the new partitions'
// replicas given by the client (CreatePartitions with Assignment, checked
// by the caller): given[i] is partition cur+i. With nil given it continues
// Kafka's assignment pattern.
func (s *Store) AddPartitionsWithAssignment(name string, total int32, given [][]int32) error {
	for attempt := 0; attempt < 3; attempt++ {
		a, version, err := s.zk.TopicAssignment(name)
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%w: %s", controller.ErrUnknownTopic, name)
		}
		if err != nil {
			return err
		}
		cur := int32(len(a.Partitions))
		if total <= cur {
			return fmt.Errorf("topic %s has %d partitions; cannot change to %d", name, cur, total)
		}
		brokers, err := s.liveBrokers()
		if err != nil {
			return err
		}
		p0 := a.Partitions[0]
		start := 0
		if len(p0) > 0 {
			for i, b := range brokers {
				if b.ID >= p0[0] {
					start = i
					break
				}
			}
		}
		extra := map[int32][]int32{}
		if given != nil {
			if int32(len(given)) != total-cur {
				return fmt.Errorf("topic %s: %d partitions added but %d assignments given", name, total-cur, len(given))
			}
			for i, rs := range given {
				extra[cur+int32(i)] = append([]int32(nil), rs...)
			}
		} else if extra, err = controller.AssignReplicasFrom(brokers, total-cur, int16(len(p0)), start, cur, s.rand); err != nil {
			return fmt.Errorf("topic %s: %w", name, err)
		}
		for p, rs := range extra {
			a.Partitions[p] = rs
		}
		err = s.zk.SetTopicAssignment(name, a, version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		return err
	}
	return fmt.Errorf("topic %s: assignment kept changing", name)
}

// NextProducerIDBlock implements controller.Store with Kafka's
// ZkProducerIdManager scheme (zkclient.ClaimProducerIDBlock): the next
// block after /latest_producer_id_block's, claimed with a version-checked
// write so two brokers never get the same ids.
func (s *Store) NextProducerIDBlock(n int64) (int64, error) {
	b, err := s.zk.ClaimProducerIDBlock(s.brokerID, n)
	return b.BlockStart, err
}

// Close implements controller.Store; the ZooKeeper client is the caller's.
func (s *Store) Close() error { return nil }
