package controller

import "maps"

// BrokerConfigs implements Store: a copy of the dynamic configs of one
// broker (entity = its id) or of the cluster default (entity "<default>"),
// empty when there are none.
func (s *FileStore) BrokerConfigs(entity string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.mu.state.BrokerConfigs[entity])
}

// UpdateBrokerConfigs implements Store: it replaces the entity's dynamic
// configs, persisted before it returns; an empty set removes the entry.
func (s *FileStore) UpdateBrokerConfigs(entity string, configs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.mu.state.BrokerConfigs[entity]
	if s.mu.state.BrokerConfigs == nil {
		s.mu.state.BrokerConfigs = map[string]map[string]string{}
	}
	if len(configs) == 0 {
		delete(s.mu.state.BrokerConfigs, entity)
	} else {
		s.mu.state.BrokerConfigs[entity] = maps.Clone(configs)
	}
	if err := s.saveLocked(); err != nil {
		if had {
			s.mu.state.BrokerConfigs[entity] = old
		} else {
			delete(s.mu.state.BrokerConfigs, entity)
		}
		return err
	}
	return nil
}
