package zkstore

// Group configs and finalized features in ZooKeeper. Group configs are a
// config entity like topics and users: /config/groups/<sanitized group>,
// {"version":1,"config":{...}} (Kafka's ZooKeeper mode predates group
// configs, so the entity type is kbroker's, named as Kafka names the
// others). Finalized features are Kafka's /feature znode (KIP-584):
// {"version":2,"status":1,"features":{"<name>":{"min_version_level":L,
// "max_version_level":L}}}; the finalized epoch is the znode's version.

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller/zkdata"
)

const (
	configEntityGroups = "groups"
	featurePath        = "/feature"
)

// GroupConfigs implements controller.Store. A group whose znode cannot be
// read or decoded is left out (and would read as having no overrides).
func (s *Store) GroupConfigs() map[string]map[string]string {
	out := map[string]map[string]string{}
	names, _, err := s.zk.Children(zkdata.ConfigPath + "/" + configEntityGroups)
	if err != nil {
		return out
	}
	for _, n := range names {
		group, err := Desanitize(n)
		if err != nil {
			continue
		}
		if cfg, err := s.groupConfigAt(n); err == nil && len(cfg) > 0 {
			out[group] = cfg
		}
	}
	return out
}

// GroupConfig implements controller.Store: one group's overrides as
// ZooKeeper holds them now (none when its znode is absent).
func (s *Store) GroupConfig(group string) (map[string]string, error) {
	return s.groupConfigAt(Sanitize(group))
}

// groupConfigAt reads the group config znode of a (sanitized) name.
func (s *Store) groupConfigAt(name string) (map[string]string, error) {
	data, _, err := s.zk.Get(zkdata.ConfigEntityPath(configEntityGroups, name))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading group configs %s: %w", name, err)
	}
	cfg, err := zkdata.DecodeConfigEntity(data)
	if err != nil {
		return nil, fmt.Errorf("decoding group configs %s: %w", name, err)
	}
	return cfg, nil
}

// UpdateGroupConfigs implements controller.Store; an empty set deletes the
// group's znode.
func (s *Store) UpdateGroupConfigs(group string, configs map[string]string) error {
	path := zkdata.ConfigEntityPath(configEntityGroups, Sanitize(group))
	if len(configs) == 0 {
		if err := s.zk.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("deleting group configs of %s: %w", group, err)
		}
		return s.announceGroupConfigs(group)
	}
	data, err := zkdata.EncodeConfigEntity(configs)
	if err != nil {
		return err
	}
	if _, err := s.zk.Set(path, data, -1); errors.Is(err, zk.ErrNoNode) {
		_, err = s.zk.CreateWithParents(path, data, 0)
		if err != nil {
			return fmt.Errorf("writing group configs of %s: %w", group, err)
		}
	} else if err != nil {
		return fmt.Errorf("writing group configs of %s: %w", group, err)
	}
	return s.announceGroupConfigs(group)
}

// announceGroupConfigs notes a group config change in /config/changes, so
// every broker reloads the group configs (the share groups' leaders read
// share.* configs of groups configured through another broker).
func (s *Store) announceGroupConfigs(group string) error {
	note, err := zkdata.EncodeConfigChange(configEntityGroups + "/" + Sanitize(group))
	if err != nil {
		return err
	}
	if _, err := s.zk.CreateWithParents(zkdata.ConfigChangeSeqPath(), note, zk.FlagSequence); err != nil {
		return fmt.Errorf("announcing group configs of %s: %w", group, err)
	}
	return nil
}

type featureLevels struct {
	Min int16 `json:"min_version_level"`
	Max int16 `json:"max_version_level"`
}

type featureZNode struct {
	Version  int                      `json:"version"`
	Status   int                      `json:"status"`
	Features map[string]featureLevels `json:"features"`
}

// FinalizedFeatures implements controller.Store.
func (s *Store) FinalizedFeatures() (map[string]int16, int64, bool) {
	data, stat, err := s.zk.Get(featurePath)
	if err != nil || len(data) == 0 {
		return nil, 0, false
	}
	var z featureZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, 0, false
	}
	levels := make(map[string]int16, len(z.Features))
	for n, l := range z.Features {
		if l.Max > 0 {
			levels[n] = l.Max
		}
	}
	return levels, int64(stat.Version) + 1, true
}

// UpdateFinalizedFeatures implements controller.Store.
func (s *Store) UpdateFinalizedFeatures(levels map[string]int16) error {
	z := featureZNode{Version: 2, Status: 1, Features: map[string]featureLevels{}}
	for n, l := range levels {
		if l > 0 {
			z.Features[n] = featureLevels{Min: l, Max: l}
		}
	}
	data, err := zkdata.Marshal(z)
	if err != nil {
		return err
	}
	if _, err := s.zk.Set(featurePath, data, -1); errors.Is(err, zk.ErrNoNode) {
		_, err = s.zk.CreateWithParents(featurePath, data, 0)
		if err != nil {
			return fmt.Errorf("writing %s: %w", featurePath, err)
		}
	} else if err != nil {
		return fmt.Errorf("writing %s: %w", featurePath, err)
	}
	return nil
}
