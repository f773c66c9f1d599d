package integration

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkstore"
)

// ACLs in ZooKeeper as Kafka 3.9 lays them out, written by one broker and
// seen, with a change notification, by another.
func TestZooKeeperACLs(t *testing.T) {
	z := StartZooKeeper(t)
	a, b := startNode(t, z, 1), startNode(t, z, 2)
	sa, err := zkstore.Open(a.zk, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := zkstore.Open(b.zk, 2, "")
	if err != nil {
		t.Fatal(err)
	}

	changes := make(chan struct{}, 16)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sb.WatchACLChanges(stop, func() { changes <- struct{}{} })
	}()
	defer func() { close(stop); <-done }()
	waitChange := func(what string) {
		t.Helper()
		select {
		case <-changes:
		case <-time.After(10 * time.Second):
			t.Fatalf("no ACL change notification after %s", what)
		}
	}
	waitChange("starting the watch") // the initial load

	read := controller.ACL{ResourceType: "Topic", Name: "foo", PatternType: "LITERAL", Principal: "User:alice", Host: "*", Operation: "Read", Permission: "Allow"}
	write := controller.ACL{ResourceType: "TransactionalId", Name: "tx-", PatternType: "PREFIXED", Principal: "User:alice", Host: "*", Operation: "Write", Permission: "Allow"}
	if err := sa.UpdateACLs([]controller.ACL{read, write, read}, nil); err != nil {
		t.Fatal(err)
	}
	waitChange("adding")
	if got := sb.ACLs(); len(got) != 2 || !slices.Contains(got, read) || !slices.Contains(got, write) {
		t.Fatalf("the other broker reads %+v", got)
	}

	data, _, err := a.zk.Get("/kafka-acl/Topic/foo")
	if err != nil {
		t.Fatal(err)
	}
	var node struct {
		Version int              `json:"version"`
		ACLs    []map[string]any `json:"acls"`
	}
	if err := json.Unmarshal(data, &node); err != nil || node.Version != 1 || len(node.ACLs) != 1 ||
		node.ACLs[0]["principal"] != "User:alice" || node.ACLs[0]["permissionType"] != "Allow" ||
		node.ACLs[0]["operation"] != "Read" || node.ACLs[0]["host"] != "*" {
		t.Fatalf("/kafka-acl/Topic/foo holds %s (%v)", data, err)
	}
	if ok, _, err := a.zk.Exists("/kafka-acl-extended/prefixed/TransactionalId/tx-"); err != nil || !ok {
		t.Fatalf("prefixed ACL znode missing: %v", err)
	}
	if names, _, err := a.zk.Children("/kafka-acl-changes"); err != nil || len(names) == 0 {
		t.Fatalf("no change znode: %v %v", names, err)
	}

	if err := sb.UpdateACLs(nil, []controller.ACL{read}); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := a.zk.Exists("/kafka-acl/Topic/foo"); err != nil || ok {
		t.Fatalf("the znode of a resource without ACLs stays: %v", err)
	}
	if got := sa.ACLs(); !slices.Equal(got, []controller.ACL{write}) {
		t.Fatalf("after removing: %+v", got)
	}
}
