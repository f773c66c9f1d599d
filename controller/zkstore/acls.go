package zkstore

// ACLs in ZooKeeper, in Kafka 3.9's layout (ZkAclStore, AclAuthorizer):
// LITERAL bindings under /kafka-acl/<ResourceType>/<name>, PREFIXED ones
// under /kafka-acl-extended/prefixed/<ResourceType>/<name>, each znode
// {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
// "operation":"Read","host":"*"}]}, written with a version check and
// deleted when its last ACL goes. Every change is announced by a sequential
// znode: /kafka-acl-changes/acl_changes_N holding "TOPIC:foo" for a
// literal resource, /kafka-acl-extended-changes/acl_changes_N holding
// {"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}
// (aclChange: Java's enum names there, the paths' names in the znodes);
// every broker watches both and reloads (WatchACLChanges). Change znodes
// older than 15 minutes are removed by the writer, as Kafka's listeners do.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkdata"
)

const (
	aclLiteralRoot    = "/kafka-acl"
	aclPrefixedRoot   = "/kafka-acl-extended/prefixed"
	aclChanges        = "/kafka-acl-changes"
	aclExtendedChange = "/kafka-acl-extended-changes"
	aclChangePrefix   = "acl_changes_"
	aclChangeExpiry   = 15 * time.Minute
)

type aclZNode struct {
	Version int        `json:"version"`
	ACLs    []aclEntry `json:"acls"`
}

type aclEntry struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

type aclResource struct {
	typ, name, pattern string
}

func aclRoot(pattern string) string {
	if pattern == "PREFIXED" {
		return aclPrefixedRoot
	}
	return aclLiteralRoot
}

func (r aclResource) path() string { return aclRoot(r.pattern) + "/" + r.typ + "/" + r.name }

// ACLs implements controller.Store. A znode that cannot be read or decoded
// is left out.
func (s *Store) ACLs() []controller.ACL {
	var out []controller.ACL
	for _, pattern := range []string{"LITERAL", "PREFIXED"} {
		types, _, err := s.zk.Children(aclRoot(pattern))
		if err != nil {
			continue
		}
		for _, typ := range types {
			names, _, err := s.zk.Children(aclRoot(pattern) + "/" + typ)
			if err != nil {
				continue
			}
			for _, name := range names {
				r := aclResource{typ, name, pattern}
				node, _, err := s.readACLNode(r)
				if err != nil {
					continue
				}
				for _, e := range node.ACLs {
					out = append(out, controller.ACL{ResourceType: typ, Name: name, PatternType: pattern,
						Principal: e.Principal, Host: e.Host, Operation: e.Operation, Permission: e.PermissionType})
				}
			}
		}
	}
	controller.SortACLs(out)
	return out
}

// readACLNode reads a resource's znode and its version (-1: absent).
func (s *Store) readACLNode(r aclResource) (aclZNode, int32, error) {
	data, stat, err := s.zk.Get(r.path())
	if errors.Is(err, zk.ErrNoNode) {
		return aclZNode{Version: 1}, -1, nil
	}
	if err != nil {
		return aclZNode{}, 0, fmt.Errorf("reading %s: %w", r.path(), err)
	}
	var n aclZNode
	if err := json.Unmarshal(data, &n); err != nil {
		return aclZNode{}, 0, fmt.Errorf("decoding %s: %w", r.path(), err)
	}
	return n, stat.Version, nil
}

// UpdateACLs implements controller.Store: each resource's znode is
// rewritten with a version check (retried when another broker wrote it
// first), then the change is announced.
func (s *Store) UpdateACLs(add, remove []controller.ACL) error {
	byRes := map[aclResource]struct{ add, remove []controller.ACL }{}
	for _, a := range add {
		r := aclResource{a.ResourceType, a.Name, a.PatternType}
		ch := byRes[r]
		ch.add = append(ch.add, a)
		byRes[r] = ch
	}
	for _, a := range remove {
		r := aclResource{a.ResourceType, a.Name, a.PatternType}
		ch := byRes[r]
		ch.remove = append(ch.remove, a)
		byRes[r] = ch
	}
	for r, ch := range byRes {
		if strings.Contains(r.name, "/") || strings.Contains(r.typ, "/") {
			return fmt.Errorf("resource name %q cannot be stored in ZooKeeper", r.name)
		}
		if err := s.updateACLNode(r, ch.add, ch.remove); err != nil {
			return err
		}
		if err := s.announceACLChange(r); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) updateACLNode(r aclResource, add, remove []controller.ACL) error {
	entry := func(a controller.ACL) aclEntry {
		return aclEntry{Principal: a.Principal, PermissionType: a.Permission, Operation: a.Operation, Host: a.Host}
	}
	for attempt := 0; ; attempt++ {
		node, version, err := s.readACLNode(r)
		if err != nil {
			return err
		}
		var next []aclEntry
		for _, e := range node.ACLs {
			if !slices.ContainsFunc(remove, func(a controller.ACL) bool { return entry(a) == e }) {
				next = append(next, e)
			}
		}
		for _, a := range add {
			if !slices.Contains(next, entry(a)) {
				next = append(next, entry(a))
			}
		}
		switch {
		case len(next) == 0 && version < 0:
			return nil
		case len(next) == 0:
			err = s.zk.Delete(r.path(), version)
		default:
			data, merr := zkdata.Marshal(aclZNode{Version: 1, ACLs: next})
			if merr != nil {
				return merr
			}
			if version < 0 {
				_, err = s.zk.CreateWithParents(r.path(), data, 0)
			} else {
				_, err = s.zk.Set(r.path(), data, version)
			}
		}
		if err == nil {
			return nil
		}
		retry := errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode)
		if !retry || attempt >= 20 {
			return fmt.Errorf("writing %s: %w", r.path(), err)
		}
	}
}

// announceACLChange creates the change znode every broker watches, and
// removes expired ones.
func (s *Store) announceACLChange(r aclResource) error {
	root, data, err := aclChange(r)
	if err != nil {
		return err
	}
	if _, err := s.zk.CreateWithParents(root+"/"+aclChangePrefix, data, zk.FlagSequence); err != nil {
		return fmt.Errorf("announcing the ACL change of %s: %w", r.path(), err)
	}
	s.purgeACLChanges(root)
	return nil
}

// aclChangeEnumNames are Java's ResourceType enum names of the resource
// types as the znode paths spell them.
var aclChangeEnumNames = map[string]string{
	"Topic": "TOPIC", "Group": "GROUP", "Cluster": "CLUSTER", "TransactionalId": "TRANSACTIONAL_ID",
	"DelegationToken": "DELEGATION_TOKEN", "User": "USER",
}

// aclChangeEvent is the body of an extended change znode, in the order of
// Kafka's ExtendedAclChangeEvent.
type aclChangeEvent struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
}

// aclChange is the change znode announcing a change of r's ACLs, as Kafka
// 3.9's ZkAclChangeStore writes it: under /kafka-acl-changes the data
// "TOPIC:foo" for a literal resource, under /kafka-acl-extended-changes
// {"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}
// for a prefixed one. The resource type is Java's enum name (TOPIC,
// TRANSACTIONAL_ID), not the znode path's Topic: Kafka reads either, as it
// upper-cases what it reads, but writes the enum name.
func aclChange(r aclResource) (root string, data []byte, err error) {
	typ, ok := aclChangeEnumNames[r.typ]
	if !ok {
		typ = strings.ToUpper(r.typ)
	}
	if r.pattern != "PREFIXED" {
		return aclChanges, []byte(typ + ":" + r.name), nil
	}
	data, err = zkdata.Marshal(aclChangeEvent{Version: 1, ResourceType: typ, Name: r.name, PatternType: r.pattern})
	return aclExtendedChange, data, err
}

// purgeACLChanges removes the change znodes older than aclChangeExpiry;
// failures are left for the next writer.
func (s *Store) purgeACLChanges(root string) {
	names, _, err := s.zk.Children(root)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-aclChangeExpiry).UnixMilli()
	for _, n := range names {
		if ok, stat, err := s.zk.Exists(root + "/" + n); err == nil && ok && stat.Ctime < cutoff {
			_ = s.zk.Delete(root+"/"+n, -1)
		}
	}
}

// WatchACLChanges calls onChange whenever a change znode appears under
// /kafka-acl-changes or /kafka-acl-extended-changes (and once at the
// start), until stop is closed. It runs in the caller's goroutine; a
// ZooKeeper error is retried after a second.
func (s *Store) WatchACLChanges(stop <-chan struct{}, onChange func()) {
	for _, root := range []string{aclChanges, aclExtendedChange} {
		_ = s.zk.EnsurePath(root)
	}
	for {
		// The watches are set before the reload reads the ACLs: a change
		// announced in between then fires them instead of being missed
		// until the next change.
		var events []<-chan zk.Event
		for _, root := range []string{aclChanges, aclExtendedChange} {
			_, _, ev, err := s.zk.ChildrenW(root)
			if err != nil {
				events = nil
				break
			}
			events = append(events, ev)
		}
		if len(events) != 2 {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				continue
			}
		}
		onChange()
		select {
		case <-stop:
			return
		case <-events[0]:
		case <-events[1]:
		}
	}
}
