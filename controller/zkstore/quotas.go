package zkstore

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// Client quotas are entity configs as Kafka 3.9 keeps them in ZooKeeper:
// /config/users/<u>, /config/clients/<c> and /config/users/<u>/clients/<c>
// (names sanitized, <default> for the defaults), each quota a string
// value beside the user's SCRAM credentials; every write is announced in
// /config/changes with the entity path, as Kafka's AdminZkClient does.

// quotaKeys are the quota keys a user or client config may hold; other
// keys (SCRAM credentials) are not quotas.
var quotaKeys = map[string]bool{
	"producer_byte_rate": true, "consumer_byte_rate": true,
	"request_percentage": true, "controller_mutation_rate": true,
}

// integralQuota are the LONG quotas, written without a fraction.
var integralQuota = map[string]bool{"producer_byte_rate": true, "consumer_byte_rate": true}

// formatQuota writes a value as Kafka does: a LONG as an integer, a DOUBLE
// as Java's Double.toString (at least one fractional digit).
func formatQuota(key string, v float64) string {
	if integralQuota[key] {
		return strconv.FormatInt(int64(v), 10)
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func (s *Store) entityConfig(path string) (map[string]string, int32, error) {
	data, stat, err := s.zk.Get(zkdata.ConfigPath + "/" + path)
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, -2, nil
	}
	if err != nil {
		return nil, 0, err
	}
	cfg, err := zkdata.DecodeConfigEntity(data)
	return cfg, stat.Version, err
}

// quotasOf adds the quotas of the entity config at path to out.
func (s *Store) quotasOf(path string, out map[string]map[string]float64) {
	cfg, _, err := s.entityConfig(path)
	if err != nil {
		return
	}
	for k, v := range cfg {
		if !quotaKeys[k] {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		if out[path] == nil {
			out[path] = map[string]float64{}
		}
		out[path][k] = f
	}
}

func (s *Store) children(path string) []string {
	ch, _, err := s.zk.Children(path)
	if err != nil {
		return nil
	}
	sort.Strings(ch)
	return ch
}

// ClientQuotas implements controller.Store.
func (s *Store) ClientQuotas() map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, u := range s.children(zkdata.ConfigPath + "/" + zkdata.ConfigEntityUsers) {
		p := zkdata.ConfigEntityUsers + "/" + u
		s.quotasOf(p, out)
		for _, c := range s.children(zkdata.ConfigPath + "/" + p + "/" + zkdata.ConfigEntityClients) {
			s.quotasOf(p+"/"+zkdata.ConfigEntityClients+"/"+c, out)
		}
	}
	for _, c := range s.children(zkdata.ConfigPath + "/" + zkdata.ConfigEntityClients) {
		s.quotasOf(zkdata.ConfigEntityClients+"/"+c, out)
	}
	return out
}

// AlterClientQuotas implements controller.Store: each entity's config is
// rewritten with a version check (keeping its other keys) and announced in
// /config/changes.
func (s *Store) AlterClientQuotas(changes []controller.QuotaChange) error {
	byEntity := map[string][]controller.QuotaChange{}
	var order []string
	for _, ch := range changes {
		if _, ok := byEntity[ch.Entity]; !ok {
			order = append(order, ch.Entity)
		}
		byEntity[ch.Entity] = append(byEntity[ch.Entity], ch)
	}
	for _, e := range order {
		cfg, version, err := s.entityConfig(e)
		if err != nil {
			return err
		}
		for _, ch := range byEntity[e] {
			if ch.Remove {
				delete(cfg, ch.Key)
			} else {
				cfg[ch.Key] = formatQuota(ch.Key, ch.Value)
			}
		}
		data, err := zkdata.EncodeConfigEntity(cfg)
		if err != nil {
			return err
		}
		path := zkdata.ConfigPath + "/" + e
		if version == -2 {
			_, err = s.zk.CreateWithParents(path, data, 0)
		} else {
			_, err = s.zk.Set(path, data, version)
		}
		if err != nil {
			return fmt.Errorf("writing quotas of %s: %w", e, err)
		}
		note, err := zkdata.EncodeConfigChange(e)
		if err != nil {
			return err
		}
		if _, err := s.zk.CreateWithParents(zkdata.ConfigChangeSeqPath(), note, zk.FlagSequence); err != nil {
			return err
		}
	}
	return nil
}
