package restproxy

// The v2 consumer instance: one Kafka client per instance, created by its
// first subscribe (a group member, kgo's consumer group) or assign (no
// member: the group's committed offsets are its starting points and its
// commits are simple commits), and the registry of instances with their
// expiry.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds of one instance's fetch buffer: kgo holds at most one fetch of
// instanceFetchBytes (MaxConcurrentFetches 1).
const (
	instanceFetchBytes          = 4 << 20
	instanceFetchPartitionBytes = 1 << 20
)

type topicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp topicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// instanceMode is how an instance consumes.
type instanceMode int

const (
	modeNone instanceMode = iota
	modeSubscribed
	modeAssigned
)

// instance is one v2 consumer instance.
type instance struct {
	group, name string
	owner       string // the login's user: only they may use it
	format      string
	reset       string // earliest, latest or none
	autoCommit  bool
	minBytes    int32
	timeout     time.Duration // consumer.request.timeout.ms: default wait of a records read
	login       login

	lastUsed atomic.Int64 // unix nanoseconds of the last call's end
	busy     atomic.Int32 // calls in progress: a busy instance does not expire

	// mu serialises the calls on the instance, as Confluent's
	// KafkaConsumerState does.
	mu sync.Mutex
	// Guarded by mu.
	cl       *kgo.Client // nil in modeNone
	mode     instanceMode
	topics   []string // subscribed topics, or the pattern's one regex
	pattern  bool
	assigned []topicPartition         // modeAssigned
	position map[topicPartition]int64 // next offset to read, as Kafka's position()
	closed   bool

	// own is the group assignment (modeSubscribed), kept by kgo's
	// callbacks, which run in kgo's goroutines (so not under mu).
	own struct {
		sync.Mutex
		m map[topicPartition]bool
	}
}

// close closes the instance's client: a group member leaves its group.
func (in *instance) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.closed = true
	in.resetLocked()
}

// resetLocked closes the client and forgets subscription and assignment.
func (in *instance) resetLocked() {
	if in.cl != nil {
		in.cl.Close()
		in.cl = nil
	}
	in.mode, in.topics, in.pattern, in.assigned = modeNone, nil, false, nil
	in.position = map[topicPartition]int64{}
	in.own.Lock()
	in.own.m = map[topicPartition]bool{}
	in.own.Unlock()
}

func (in *instance) resetOffset() kgo.Offset {
	switch in.reset {
	case "earliest":
		return kgo.NewOffset().AtStart()
	case "none":
		return kgo.NoResetOffset()
	}
	return kgo.NewOffset().AtEnd()
}

func (in *instance) clientOpts() []kgo.Opt {
	opts := append(in.login.opts(),
		kgo.FetchMaxBytes(instanceFetchBytes),
		kgo.FetchMaxPartitionBytes(instanceFetchPartitionBytes),
		kgo.MaxConcurrentFetches(1),
		kgo.ConsumeResetOffset(in.resetOffset()),
	)
	if in.minBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(in.minBytes))
	}
	return opts
}

// subscribeLocked replaces the instance's client by a group member
// consuming topics (or the regex topics[0] when pattern).
func (in *instance) subscribeLocked(topics []string, pattern bool) error {
	if in.mode == modeAssigned {
		return errIllegalState("Subscription to topics, partitions and pattern are mutually exclusive")
	}
	in.resetLocked()
	onAssigned := func(_ context.Context, _ *kgo.Client, m map[string][]int32) { in.setOwned(m, true) }
	onRevoked := func(_ context.Context, _ *kgo.Client, m map[string][]int32) { in.setOwned(m, false) }
	opts := append(in.clientOpts(),
		kgo.ConsumerGroup(in.group),
		kgo.ConsumeTopics(topics...),
		kgo.OnPartitionsAssigned(onAssigned),
		kgo.OnPartitionsRevoked(onRevoked),
		kgo.OnPartitionsLost(onRevoked),
	)
	if pattern {
		opts = append(opts, kgo.ConsumeRegex())
	}
	if !in.autoCommit {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return errf(http.StatusUnprocessableEntity, codeInvalidConsumerCfg, "Invalid consumer configuration: %v", err)
	}
	in.cl, in.mode, in.topics, in.pattern = cl, modeSubscribed, topics, pattern
	return nil
}

func (in *instance) setOwned(m map[string][]int32, owned bool) {
	in.own.Lock()
	defer in.own.Unlock()
	for t, ps := range m {
		for _, p := range ps {
			if owned {
				in.own.m[topicPartition{t, p}] = true
			} else {
				delete(in.own.m, topicPartition{t, p})
			}
		}
	}
}

// assignmentLocked is the instance's partitions, sorted: the group's
// assignment when subscribed, the assigned ones when assigned.
func (in *instance) assignmentLocked() []topicPartition {
	if in.mode == modeAssigned {
		return slices.Clone(in.assigned)
	}
	in.own.Lock()
	out := make([]topicPartition, 0, len(in.own.m))
	for tp := range in.own.m {
		out = append(out, tp)
	}
	in.own.Unlock()
	slices.SortFunc(out, func(a, b topicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// assignLocked replaces the instance's client by one consuming exactly
// tps, each from the group's committed offset or else the reset offset.
func (in *instance) assignLocked(ctx context.Context, tps []topicPartition) error {
	if in.mode == modeSubscribed {
		return errIllegalState("Subscription to topics, partitions and pattern are mutually exclusive")
	}
	in.resetLocked()
	if len(tps) == 0 {
		return nil // Kafka's assign(empty) is unsubscribe
	}
	probe, err := kgo.NewClient(in.login.opts()...)
	if err != nil {
		return kafkaError(err)
	}
	committed, err := kadm.NewClient(probe).FetchOffsets(ctx, in.group)
	probe.Close()
	if err != nil {
		return kafkaError(err)
	}
	start := map[string]map[int32]kgo.Offset{}
	for _, tp := range tps {
		if start[tp.Topic] == nil {
			start[tp.Topic] = map[int32]kgo.Offset{}
		}
		at := in.resetOffset()
		if o, ok := committed.Lookup(tp.Topic, tp.Partition); ok && o.Err == nil && o.At >= 0 {
			at = kgo.NewOffset().At(o.At)
		}
		start[tp.Topic][tp.Partition] = at
	}
	cl, err := kgo.NewClient(append(in.clientOpts(), kgo.ConsumePartitions(start))...)
	if err != nil {
		return errf(http.StatusUnprocessableEntity, codeInvalidConsumerCfg, "Invalid consumer configuration: %v", err)
	}
	in.cl, in.mode, in.assigned = cl, modeAssigned, slices.Clone(tps)
	return nil
}

// checkAssignedLocked fails for a partition the instance does not
// consume, as Kafka's seek does.
func (in *instance) checkAssignedLocked(tps []topicPartition) error {
	have := in.assignmentLocked()
	for _, tp := range tps {
		if !slices.Contains(have, tp) {
			return errIllegalState("No current assignment for partition %s", tp)
		}
	}
	return nil
}

// seekLocked moves the positions of partitions the instance consumes.
func (in *instance) seekLocked(to map[topicPartition]int64) error {
	tps := make([]topicPartition, 0, len(to))
	for tp := range to {
		tps = append(tps, tp)
	}
	if err := in.checkAssignedLocked(tps); err != nil {
		return err
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for tp, off := range to {
		if set[tp.Topic] == nil {
			set[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
		in.position[tp] = off
	}
	in.cl.SetOffsets(set)
	return nil
}

// instanceKey names an instance in the registry.
type instanceKey struct{ group, name string }

// instances is the registry of the proxy's consumer instances.
type instances struct {
	mu     sync.Mutex
	m      map[instanceKey]*instance
	closed bool // by removeAll: no instance is added after the proxy's Close
}

func newInstances() *instances { return &instances{m: map[instanceKey]*instance{}} }

// add registers in: 40902 when the name is taken in its group, an error
// once the proxy closed.
func (s *instances) add(in *instance) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	k := instanceKey{in.group, in.name}
	if s.m[k] != nil {
		return errInstanceExists
	}
	in.lastUsed.Store(time.Now().UnixNano())
	s.m[k] = in
	return nil
}

// acquire returns the instance for a call by owner and marks it busy
// until release; 40403 when there is none or it is another user's.
func (s *instances) acquire(group, name, owner string) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.m[instanceKey{group, name}]
	if in == nil || in.owner != owner {
		return nil, errInstanceNotFound
	}
	in.busy.Add(1)
	return in, nil
}

func (in *instance) release() {
	in.lastUsed.Store(time.Now().UnixNano())
	in.busy.Add(-1)
}

// remove unregisters an instance (nil when there is none).
func (s *instances) remove(group, name string) *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := instanceKey{group, name}
	in := s.m[k]
	delete(s.m, k)
	return in
}

// removeExpired unregisters the idle instances unused for timeout.
func (s *instances) removeExpired(now time.Time, timeout time.Duration) []*instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*instance
	for k, in := range s.m {
		if in.busy.Load() == 0 && now.Sub(time.Unix(0, in.lastUsed.Load())) >= timeout {
			delete(s.m, k)
			out = append(out, in)
		}
	}
	return out
}

func (s *instances) removeAll() []*instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	out := make([]*instance, 0, len(s.m))
	for k, in := range s.m {
		delete(s.m, k)
		out = append(out, in)
	}
	return out
}
