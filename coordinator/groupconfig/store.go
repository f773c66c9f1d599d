package groupconfig

import (
	"maps"
	"slices"
	"sync"
)

// Store holds every group's config overrides, the one table both group
// coordinators and the GROUP config resource read. Overrides outlive their
// group (a group may be configured before it exists), as Kafka keeps them in
// the cluster metadata; persist writes a group's new set there before the
// Store applies it. Safe for concurrent use. Lock order: the coordinators
// read under their own locks, so Store's lock comes after theirs; persist
// runs under it and may take only locks below (the metadata store's).
type Store struct {
	broker Broker
	mu     struct {
		sync.Mutex
		persist func(group string, overrides map[string]string) error
		groups  map[string]map[string]string
	}
}

// NewStore returns an empty Store over the broker's defaults and bounds,
// keeping overrides in memory until Attach.
func NewStore(b Broker) *Store {
	s := &Store{broker: b}
	s.mu.groups = map[string]map[string]string{}
	return s
}

// Attach loads the overrides a metadata store holds and makes every later
// change persist through persist first. Loaded sets that no longer validate
// (the broker's bounds changed) are kept: Effective reads what parses, as
// Kafka keeps a stored config that a new bound would refuse.
func (s *Store) Attach(loaded map[string]map[string]string, persist func(group string, overrides map[string]string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.persist = persist
	for g, o := range loaded {
		if len(o) > 0 {
			s.mu.groups[g] = maps.Clone(o)
		}
	}
}

// Reload replaces every group's overrides with loaded, what the metadata
// store holds now (a cluster's brokers reload when another broker
// announced a change).
func (s *Store) Reload(loaded map[string]map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.groups = map[string]map[string]string{}
	for g, o := range loaded {
		if len(o) > 0 {
			s.mu.groups[g] = maps.Clone(o)
		}
	}
}

// ReloadGroup replaces one group's overrides with loaded, what the
// metadata store holds for it now.
func (s *Store) ReloadGroup(group string, loaded map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(loaded) == 0 {
		delete(s.mu.groups, group)
		return
	}
	s.mu.groups[group] = maps.Clone(loaded)
}

// Broker returns the broker defaults and bounds the Store validates against.
func (s *Store) Broker() Broker { return s.broker }

// Overrides returns a copy of a group's overrides (empty when none).
func (s *Store) Overrides(group string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.mu.groups[group])
}

// Groups returns the ids of the groups with overrides, sorted
// (ListConfigResources lists them as GROUP resources).
func (s *Store) Groups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.mu.groups))
	for id, o := range s.mu.groups {
		if len(o) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Values returns a group's effective configs.
func (s *Store) Values(group string) Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broker.Effective(s.mu.groups[group])
}

// Alter changes a group's overrides atomically: update edits a copy of the
// current set (it may return an error with Kafka's message, which the
// caller answers as it chose), the result must pass Broker.Validate, and
// unless validateOnly it is persisted and applied. A validation failure is
// returned as *InvalidError.
func (s *Store) Alter(group string, validateOnly bool, update func(cur map[string]string) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.mu.groups[group])
	if next == nil {
		next = map[string]string{}
	}
	if err := update(next); err != nil {
		return err
	}
	if err := s.broker.Validate(next); err != nil {
		return &InvalidError{Msg: err.Error()}
	}
	if validateOnly {
		return nil
	}
	if s.mu.persist != nil {
		if err := s.mu.persist(group, next); err != nil {
			return err
		}
	}
	if len(next) == 0 {
		delete(s.mu.groups, group)
	} else {
		s.mu.groups[group] = next
	}
	return nil
}

// InvalidError is a rejected set of overrides; Msg is Kafka's
// INVALID_CONFIG message.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }
