package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/controller/zkstore"
)

// Dynamic broker configs in ZooKeeper have Kafka 3.9's layout:
// /config/brokers/<id> and /config/brokers/<default> hold
// {"version":1,"config":{...}}, and each change leaves a
// /config/changes/config_change_<seq> naming the entity.
func TestZooKeeperBrokerConfigs(t *testing.T) {
	s, a := openOneStore(t)
	if got := s.BrokerConfigs("<default>"); len(got) != 0 {
		t.Fatalf("no configs yet: %v", got)
	}
	before, _, err := a.zk.Children(zkdata.ConfigChangesPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateBrokerConfigs("<default>", map[string]string{"log.retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateBrokerConfigs("1", map[string]string{"log.level": "DEBUG"}); err != nil {
		t.Fatal(err)
	}
	data, _, err := a.zk.Get("/config/brokers/<default>")
	if err != nil {
		t.Fatal(err)
	}
	var znode struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &znode); err != nil || znode.Version != 1 || znode.Config["log.retention.ms"] != "1000" {
		t.Fatalf("/config/brokers/<default> = %s (%v)", data, err)
	}
	if got := s.BrokerConfigs("1"); got["log.level"] != "DEBUG" || len(got) != 1 {
		t.Fatalf("broker 1: %v", got)
	}
	after, _, err := a.zk.Children(zkdata.ConfigChangesPath)
	if err != nil {
		t.Fatal(err)
	}
	var entities []string
	for _, c := range after {
		if strings.HasPrefix(c, zkdata.ConfigChangeSeqPrefix) && !contains(before, c) {
			d, _, err := a.zk.Get(zkdata.ConfigChangesPath + "/" + c)
			if err != nil {
				t.Fatal(err)
			}
			e, err := zkdata.DecodeConfigChange(d)
			if err != nil {
				t.Fatal(err)
			}
			entities = append(entities, e)
		}
	}
	if len(entities) != 2 || !contains(entities, "brokers/<default>") || !contains(entities, "brokers/1") {
		t.Fatalf("change notifications name %v", entities)
	}
	// An empty set keeps the znode, empty, as Kafka does.
	if err := s.UpdateBrokerConfigs("1", nil); err != nil {
		t.Fatal(err)
	}
	if got := s.BrokerConfigs("1"); len(got) != 0 {
		t.Fatalf("broker 1 after clearing: %v", got)
	}
}

// openOneStore is broker 1's metadata store on a new ZooKeeper.
func openOneStore(t *testing.T) (*zkstore.Store, *node) {
	t.Helper()
	a := startNode(t, StartZooKeeper(t), 1)
	s, err := zkstore.Open(a.zk, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	return s, a
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Group configs live in /config/groups/<sanitized group>: a broker reads one
// group's as ZooKeeper holds it (GroupConfig, what a share-partition's
// leader does before initializing it) as well as all of them, and each
// change is announced in /config/changes.
func TestZooKeeperGroupConfigs(t *testing.T) {
	s, a := openOneStore(t)
	if got, err := s.GroupConfig("g/1"); err != nil || len(got) != 0 {
		t.Fatalf("no configs yet: %v %v", got, err)
	}
	before, _, err := a.zk.Children(zkdata.ConfigChangesPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateGroupConfigs("g/1", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GroupConfig("g/1"); err != nil || len(got) != 1 || got["share.auto.offset.reset"] != "earliest" {
		t.Fatalf("GroupConfig(g/1): %v %v", got, err)
	}
	if all := s.GroupConfigs(); len(all) != 1 || all["g/1"]["share.auto.offset.reset"] != "earliest" {
		t.Fatalf("GroupConfigs: %v", all)
	}
	after, _, err := a.zk.Children(zkdata.ConfigChangesPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+1 {
		t.Fatalf("change notifications before %v, after %v", before, after)
	}
	if err := s.UpdateGroupConfigs("g/1", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GroupConfig("g/1"); err != nil || len(got) != 0 {
		t.Fatalf("after deleting: %v %v", got, err)
	}
}
