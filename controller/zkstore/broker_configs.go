package zkstore

// Dynamic broker configs in ZooKeeper, as Kafka 3.9 keeps them:
// /config/brokers/<id> for one broker and /config/brokers/<default> for
// the cluster default, each {"version":1,"config":{...}}, and every change
// announced by a /config/changes/config_change_<seq> znode
// {"version":2,"entity_path":"brokers/<id or <default>>"} that the brokers
// watch (broker/dynamic_cluster.go).

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// BrokerConfigs implements controller.Store: the entity's configs, empty
// when its znode is absent or unreadable.
func (s *Store) BrokerConfigs(entity string) map[string]string {
	data, _, err := s.zk.Get(zkdata.ConfigEntityPath(zkdata.ConfigEntityBrokers, entity))
	if err != nil {
		return map[string]string{}
	}
	cfg, err := zkdata.DecodeConfigEntity(data)
	if err != nil {
		return map[string]string{}
	}
	return cfg
}

// UpdateBrokerConfigs implements controller.Store: it writes the entity's
// znode (Kafka keeps an empty {"config":{}} rather than deleting it) and
// then the change notification.
func (s *Store) UpdateBrokerConfigs(entity string, configs map[string]string) error {
	path := zkdata.ConfigEntityPath(zkdata.ConfigEntityBrokers, entity)
	data, err := zkdata.EncodeConfigEntity(configs)
	if err != nil {
		return err
	}
	if _, err := s.zk.Set(path, data, -1); errors.Is(err, zk.ErrNoNode) {
		if _, err = s.zk.CreateWithParents(path, data, 0); err != nil {
			return fmt.Errorf("writing broker configs of %s: %w", entity, err)
		}
	} else if err != nil {
		return fmt.Errorf("writing broker configs of %s: %w", entity, err)
	}
	note, err := zkdata.EncodeConfigChange(zkdata.ConfigEntityBrokers + "/" + entity)
	if err != nil {
		return err
	}
	if _, err := s.zk.CreateWithParents(zkdata.ConfigChangeSeqPath(), note, zk.FlagSequence); err != nil {
		return fmt.Errorf("announcing broker configs of %s: %w", entity, err)
	}
	return nil
}
