package controller

import (
	"maps"
)

// GroupConfigs implements Store: a copy of every group's config overrides,
// by group id. Kafka keeps them in the cluster metadata (ConfigRecord of
// resource type GROUP), so they outlive the group and a restart.
func (s *FileStore) GroupConfigs() map[string]map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string]string, len(s.mu.state.GroupConfigs))
	for g, c := range s.mu.state.GroupConfigs {
		out[g] = maps.Clone(c)
	}
	return out
}

// GroupConfig implements Store: a copy of one group's overrides (empty
// when none).
func (s *FileStore) GroupConfig(group string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.mu.state.GroupConfigs[group]), nil
}

// UpdateGroupConfigs implements Store: it replaces a group's overrides; an
// empty set removes the group's entry.
func (s *FileStore) UpdateGroupConfigs(group string, configs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.mu.state.GroupConfigs[group]
	if s.mu.state.GroupConfigs == nil {
		s.mu.state.GroupConfigs = map[string]map[string]string{}
	}
	if len(configs) == 0 {
		delete(s.mu.state.GroupConfigs, group)
	} else {
		s.mu.state.GroupConfigs[group] = maps.Clone(configs)
	}
	if err := s.saveLocked(); err != nil {
		if had {
			s.mu.state.GroupConfigs[group] = old
		} else {
			delete(s.mu.state.GroupConfigs, group)
		}
		return err
	}
	return nil
}

// FinalizedFeatures implements Store: the feature levels UpdateFeatures
// finalized and the number of updates so far; set is false until the first
// update, when the broker's defaults apply.
func (s *FileStore) FinalizedFeatures() (levels map[string]int16, epoch int64, set bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.state.Features == nil {
		return nil, s.mu.state.FeaturesEpoch, false
	}
	return maps.Clone(s.mu.state.Features), s.mu.state.FeaturesEpoch, true
}

// UpdateFinalizedFeatures implements Store: it replaces the finalized levels
// (a feature at level 0 is left out, as Kafka removes it) and bumps the epoch.
func (s *FileStore) UpdateFinalizedFeatures(levels map[string]int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, oldEpoch := s.mu.state.Features, s.mu.state.FeaturesEpoch
	next := make(map[string]int16, len(levels))
	for k, v := range levels {
		if v > 0 {
			next[k] = v
		}
	}
	s.mu.state.Features = next
	s.mu.state.FeaturesEpoch++
	if err := s.saveLocked(); err != nil {
		s.mu.state.Features, s.mu.state.FeaturesEpoch = old, oldEpoch
		return err
	}
	return nil
}
