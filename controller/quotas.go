package controller

import "fmt"

// QuotaChange is one change of AlterClientQuotas: Remove deletes Key of
// the entity, otherwise Value replaces it. Entity is the entity's path
// under /config as Kafka's ZooKeeper layout names it (users/<u>,
// clients/<c>, users/<u>/clients/<c>, names sanitized, <default> for a
// default), which the controller stores without interpreting.
type QuotaChange struct {
	Entity string
	Key    string
	Value  float64
	Remove bool
}

// ClientQuotas implements Store: a copy of every entity's quotas, by
// entity path.
func (s *FileStore) ClientQuotas() map[string]map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyQuotas(s.mu.state.Quotas)
}

// AlterClientQuotas implements Store: the changes are applied together with
// one rewrite of the file; an entity left without quotas is removed.
func (s *FileStore) AlterClientQuotas(changes []QuotaChange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.mu.state.Quotas
	next := copyQuotas(prev)
	for _, ch := range changes {
		if ch.Entity == "" {
			return fmt.Errorf("quota change of %s without an entity", ch.Key)
		}
		if ch.Remove {
			delete(next[ch.Entity], ch.Key)
			if len(next[ch.Entity]) == 0 {
				delete(next, ch.Entity)
			}
			continue
		}
		if next[ch.Entity] == nil {
			next[ch.Entity] = map[string]float64{}
		}
		next[ch.Entity][ch.Key] = ch.Value
	}
	s.mu.state.Quotas = next
	if err := s.saveLocked(); err != nil {
		s.mu.state.Quotas = prev
		return err
	}
	return nil
}

func copyQuotas(m map[string]map[string]float64) map[string]map[string]float64 {
	out := make(map[string]map[string]float64, len(m))
	for e, vals := range m {
		cp := make(map[string]float64, len(vals))
		for k, v := range vals {
			cp[k] = v
		}
		out[e] = cp
	}
	return out
}
