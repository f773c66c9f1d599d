package controller

import (
	"slices"
	"sort"
)

// ACL is one ACL binding as the metadata store keeps it, spelled as Kafka
// spells it in ZooKeeper (/kafka-acl/<ResourceType>/<name>): ResourceType
// "Topic", "Group", "Cluster", "TransactionalId", "DelegationToken" or
// "User"; PatternType "LITERAL" or "PREFIXED"; Operation "Read",
// "DescribeConfigs", …; Permission "Allow" or "Deny". The store does not
// interpret them (broker/authz does).
type ACL struct {
	ResourceType string `json:"resource_type"`
	Name         string `json:"name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// SortACLs orders acls by resource, then entry, so that listings are stable.
func SortACLs(acls []ACL) {
	sort.Slice(acls, func(i, j int) bool {
		a, b := acls[i], acls[j]
		for _, p := range [][2]string{{a.ResourceType, b.ResourceType}, {a.PatternType, b.PatternType}, {a.Name, b.Name},
			{a.Principal, b.Principal}, {a.Host, b.Host}, {a.Operation, b.Operation}, {a.Permission, b.Permission}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return false
	})
}

// ApplyACLChanges returns cur without the ACLs of remove and with those of
// add that it lacks: a binding is stored at most once.
func ApplyACLChanges(cur, add, remove []ACL) []ACL {
	out := make([]ACL, 0, len(cur)+len(add))
	for _, a := range cur {
		if !slices.Contains(remove, a) {
			out = append(out, a)
		}
	}
	for _, a := range add {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	SortACLs(out)
	return out
}

// ACLs implements Store: every ACL binding.
func (s *FileStore) ACLs() []ACL {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mu.state.ACLs)
}

// UpdateACLs implements Store: it removes the bindings of remove and adds
// those of add (an existing one is kept once), with one rewrite of the file.
func (s *FileStore) UpdateACLs(add, remove []ACL) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.mu.state.ACLs
	s.mu.state.ACLs = ApplyACLChanges(prev, add, remove)
	if err := s.saveLocked(); err != nil {
		s.mu.state.ACLs = prev
		return err
	}
	return nil
}
