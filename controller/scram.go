package controller

import (
	"fmt"
	"sort"
)

// ScramCredential is one user's SCRAM credential for one mechanism, as RFC
// 5802 has the server keep it: enough to verify a client proof and to prove
// the server's identity, never the password nor the salted password.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// ScramChange is one change of AlterScramCredentials: Delete removes the
// user's credential for Mechanism, otherwise Credential replaces it.
type ScramChange struct {
	User       string
	Mechanism  string
	Delete     bool
	Credential ScramCredential
}

// ScramCredential implements Store.
func (s *FileStore) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.mu.state.Scram[user][mechanism]
	return c, ok
}

// ScramCredentials implements Store: a copy of every credential, by user
// and mechanism.
func (s *FileStore) ScramCredentials() map[string]map[string]ScramCredential {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyScram(s.mu.state.Scram)
}

// AlterScramCredentials implements Store. The changes are applied together
// with one rewrite of the file; deleting a credential that does not exist is
// an error and nothing is changed.
func (s *FileStore) AlterScramCredentials(changes []ScramChange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.mu.state.Scram
	next := copyScram(prev)
	for _, ch := range changes {
		if ch.Delete {
			if _, ok := next[ch.User][ch.Mechanism]; !ok {
				return fmt.Errorf("no %s credential for user %q", ch.Mechanism, ch.User)
			}
			delete(next[ch.User], ch.Mechanism)
			if len(next[ch.User]) == 0 {
				delete(next, ch.User)
			}
			continue
		}
		if next[ch.User] == nil {
			next[ch.User] = map[string]ScramCredential{}
		}
		next[ch.User][ch.Mechanism] = ch.Credential
	}
	s.mu.state.Scram = next
	if err := s.saveLocked(); err != nil {
		s.mu.state.Scram = prev
		return err
	}
	return nil
}

// ScramUsers returns the users of creds in ascending order.
func ScramUsers(creds map[string]map[string]ScramCredential) []string {
	users := make([]string, 0, len(creds))
	for u := range creds {
		users = append(users, u)
	}
	sort.Strings(users)
	return users
}

func copyScram(m map[string]map[string]ScramCredential) map[string]map[string]ScramCredential {
	out := make(map[string]map[string]ScramCredential, len(m))
	for u, byMech := range m {
		cp := make(map[string]ScramCredential, len(byMech))
		for mech, c := range byMech {
			cp[mech] = c
		}
		out[u] = cp
	}
	return out
}
