package restproxy

// v3 configs of topics, brokers and the cluster's broker defaults
// (/broker-configs): list, one config (GET, PUT, DELETE) and many
// (POST .../configs:alter); partition replicas; a group's consumer with
// its assignments; in Confluent's shapes.

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type v3Replica struct {
	Kind        string `json:"kind"`
	Metadata    v3Meta `json:"metadata"`
	ClusterID   string `json:"cluster_id"`
	TopicName   string `json:"topic_name"`
	PartitionID int32  `json:"partition_id"`
	BrokerID    int32  `json:"broker_id"`
	IsLeader    bool   `json:"is_leader"`
	IsInSync    bool   `json:"is_in_sync"`
	Broker      v3Rel  `json:"broker"`
}

type v3Assignment struct {
	Kind            string `json:"kind"`
	Metadata        v3Meta `json:"metadata"`
	ClusterID       string `json:"cluster_id"`
	ConsumerGroupID string `json:"consumer_group_id"`
	ConsumerID      string `json:"consumer_id"`
	TopicName       string `json:"topic_name"`
	PartitionID     int32  `json:"partition_id"`
	Partition       v3Rel  `json:"partition"`
	Lag             v3Rel  `json:"lag"`
}

// configScope is what a v3 config path names: a topic's configs, a
// broker's, or the cluster-wide broker defaults (/broker-configs).
type configScope struct {
	topic  string // a topic's configs
	broker *int32 // a broker's; nil with topic "": the cluster's defaults
	path   string // below the cluster's URL
}

// configScopes are the v3 config collections: their path patterns and
// how to read the scope from a call's path.
var configScopes = []struct {
	pattern  string
	listKind string
	scope    func(v *v3Call) (configScope, error)
}{
	{"/topics/{topic_name}/configs", "KafkaTopicConfigList", func(v *v3Call) (configScope, error) {
		td, err := v.topicParam()
		return configScope{topic: td.Topic, path: "/topics/" + td.Topic + "/configs"}, err
	}},
	{"/brokers/{broker_id}/configs", "KafkaBrokerConfigList", func(v *v3Call) (configScope, error) {
		b, err := v.brokerParam()
		return configScope{broker: &b.NodeID, path: "/brokers/" + strconv.Itoa(int(b.NodeID)) + "/configs"}, err
	}},
	{"/broker-configs", "KafkaClusterConfigList", func(*v3Call) (configScope, error) {
		return configScope{path: "/broker-configs"}, nil
	}},
}

// configs reads the scope's configs.
func (v *v3Call) configs(sc configScope) ([]kadm.Config, error) {
	if sc.topic != "" {
		return v.topicConfigs(sc.topic)
	}
	var brokers []int32
	name := "" // kadm's name of the cluster-wide resource
	if sc.broker != nil {
		brokers, name = []int32{*sc.broker}, strconv.Itoa(int(*sc.broker))
	}
	rcs, err := v.uc.adm.DescribeBrokerConfigs(v.ctx, brokers...)
	rc, err := onlyResult(rcs, err, name, func(r kadm.ResourceConfig) error { return r.Err })
	return rc.Configs, err
}

// alterConfigs applies incremental changes to the scope.
func (v *v3Call) alterConfigs(sc configScope, changes []kadm.AlterConfig, validateOnly bool) error {
	adm := v.uc.adm
	var resps kadm.AlterConfigsResponses
	var err error
	name := sc.topic
	switch {
	case sc.topic != "" && validateOnly:
		resps, err = adm.ValidateAlterTopicConfigs(v.ctx, changes, sc.topic)
	case sc.topic != "":
		resps, err = adm.AlterTopicConfigs(v.ctx, changes, sc.topic)
	default:
		var brokers []int32
		if sc.broker != nil {
			brokers, name = []int32{*sc.broker}, strconv.Itoa(int(*sc.broker))
		}
		alter := adm.AlterBrokerConfigs
		if validateOnly {
			alter = adm.ValidateAlterBrokerConfigs
		}
		resps, err = alter(v.ctx, changes, brokers...)
	}
	if _, err := onlyResult(resps, err, name, func(r kadm.AlterConfigsResponse) error { return r.Err }); err != nil {
		return err
	}
	v.w.WriteHeader(http.StatusNoContent)
	return nil
}

// config is one config entry of the scope.
func (v *v3Call) config(sc configScope, cf kadm.Config) v3Config {
	out := v3Config{
		ClusterID: v.md.Cluster, Name: cf.Key, Value: cf.Value, IsSensitive: cf.Sensitive,
		IsDefault: cf.Source == kmsg.ConfigSourceDefaultConfig, Source: cf.Source.String(), Synonyms: []v3Synonym{},
	}
	for _, s := range cf.Synonyms {
		out.Synonyms = append(out.Synonyms, v3Synonym{Name: s.Key, Value: s.Value, Source: s.Source.String()})
	}
	switch {
	case sc.topic != "":
		out.Kind, out.TopicName = "KafkaTopicConfig", sc.topic
		out.Metadata = v.meta(sc.path+"/"+cf.Key, "/topic="+sc.topic+"/config="+cf.Key)
	case sc.broker != nil:
		out.Kind, out.BrokerID = "KafkaBrokerConfig", sc.broker
		out.Metadata = v.meta(sc.path+"/"+cf.Key, "/broker="+strconv.Itoa(int(*sc.broker))+"/config="+cf.Key)
	default:
		out.Kind, out.ConfigType = "KafkaClusterConfig", "BROKER"
		out.Metadata = v.meta(sc.path+"/"+cf.Key, "/broker-config="+cf.Key)
	}
	return out
}

// partitionDetail is the path's partition of the path's topic.
func (v *v3Call) partitionDetail() (kadm.PartitionDetail, error) {
	td, err := v.topicParam()
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	part, err := partitionParam(v.call)
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	pd, ok := td.Partitions[part]
	if !ok {
		return pd, errPartitionNotFound
	}
	return pd, nil
}

func (v *v3Call) replica(pd kadm.PartitionDetail, broker int32) v3Replica {
	id, b := strconv.Itoa(int(pd.Partition)), strconv.Itoa(int(broker))
	return v3Replica{
		Kind:      "KafkaReplica",
		Metadata:  v.meta("/topics/"+pd.Topic+"/partitions/"+id+"/replicas/"+b, "/topic="+pd.Topic+"/partition="+id+"/replica="+b),
		ClusterID: v.md.Cluster, TopicName: pd.Topic, PartitionID: pd.Partition, BrokerID: broker,
		IsLeader: broker == pd.Leader, IsInSync: slices.Contains(pd.ISR, broker), Broker: v3Rel{v.base + "/brokers/" + b},
	}
}

func (p *Proxy) routesV3Configs() {
	for _, cs := range configScopes {
		// read is the scope of the path and its configs.
		read := func(v *v3Call) (configScope, []kadm.Config, error) {
			sc, err := cs.scope(v)
			if err != nil {
				return sc, nil, err
			}
			cfs, err := v.configs(sc)
			return sc, cfs, err
		}
		p.v3("GET "+cs.pattern, func(v *v3Call) error {
			sc, cfs, err := read(v)
			if err != nil {
				return err
			}
			out := []v3Config{}
			for _, cf := range cfs {
				out = append(out, v.config(sc, cf))
			}
			return v.list(cs.listKind, sc.path, out)
		})
		p.v3("GET "+cs.pattern+"/{name}", func(v *v3Call) error {
			sc, cfs, err := read(v)
			if err != nil {
				return err
			}
			for _, cf := range cfs {
				if cf.Key == v.r.PathValue("name") {
					return v.reply(http.StatusOK, v.config(sc, cf))
				}
			}
			return errf(http.StatusNotFound, http.StatusNotFound, "Config %s cannot be found.", v.r.PathValue("name"))
		})
		p.v3("PUT "+cs.pattern+"/{name}", func(v *v3Call) error {
			sc, err := cs.scope(v)
			if err != nil {
				return err
			}
			var req struct {
				Value *string `json:"value"`
			}
			if err := v.decode(&req, true); err != nil {
				return err
			}
			return v.alterConfigs(sc, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: v.r.PathValue("name"), Value: req.Value}}, false)
		})
		p.v3("DELETE "+cs.pattern+"/{name}", func(v *v3Call) error {
			sc, err := cs.scope(v)
			if err != nil {
				return err
			}
			return v.alterConfigs(sc, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: v.r.PathValue("name")}}, false)
		})
		p.v3("POST "+cs.pattern+":alter", func(v *v3Call) error {
			sc, err := cs.scope(v)
			if err != nil {
				return err
			}
			changes, validateOnly, err := v.configChanges()
			if err != nil {
				return err
			}
			return v.alterConfigs(sc, changes, validateOnly)
		})
	}
	p.v3("GET /topics/{topic_name}/partitions/{partition}/replicas", func(v *v3Call) error {
		pd, err := v.partitionDetail()
		if err != nil {
			return err
		}
		out := []v3Replica{}
		for _, b := range pd.Replicas {
			out = append(out, v.replica(pd, b))
		}
		return v.list("KafkaReplicaList", "/topics/"+pd.Topic+"/partitions/"+strconv.Itoa(int(pd.Partition))+"/replicas", out)
	})
	p.v3("GET /topics/{topic_name}/partitions/{partition}/replicas/{broker_id}", func(v *v3Call) error {
		pd, err := v.partitionDetail()
		if err != nil {
			return err
		}
		b, err := strconv.ParseInt(v.r.PathValue("broker_id"), 10, 32)
		if err != nil || !slices.Contains(pd.Replicas, int32(b)) {
			return errf(http.StatusNotFound, http.StatusNotFound, "Replica %s cannot be found.", v.r.PathValue("broker_id"))
		}
		return v.reply(http.StatusOK, v.replica(pd, int32(b)))
	})
	p.v3("GET /consumer-groups/{group}/consumers/{consumer}", func(v *v3Call) error {
		g, m, err := v.member()
		if err != nil {
			return err
		}
		return v.reply(http.StatusOK, v.consumer(g.Group, m))
	})
	p.v3("GET /consumer-groups/{group}/consumers/{consumer}/assignments", func(v *v3Call) error {
		g, m, err := v.member()
		if err != nil {
			return err
		}
		path := "/consumer-groups/" + g.Group + "/consumers/" + m.MemberID + "/assignments"
		out := []v3Assignment{}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				for _, p := range t.Partitions {
					id := strconv.Itoa(int(p))
					out = append(out, v3Assignment{
						Kind: "KafkaConsumerAssignment", Metadata: v.meta(path+"/"+t.Topic+"/partitions/"+id, "/consumer-group="+g.Group+"/consumer="+m.MemberID+"/assignment="+t.Topic+"/partition="+id),
						ClusterID: v.md.Cluster, ConsumerGroupID: g.Group, ConsumerID: m.MemberID, TopicName: t.Topic, PartitionID: p,
						Partition: v3Rel{v.base + "/topics/" + t.Topic + "/partitions/" + id},
						Lag:       v3Rel{v.base + "/consumer-groups/" + g.Group + "/lags/" + t.Topic + "/partitions/" + id},
					})
				}
			}
		}
		return v.list("KafkaConsumerAssignmentList", path, out)
	})
}

// member is the path's group and consumer (404 when either is unknown).
func (v *v3Call) member() (kadm.DescribedGroup, kadm.DescribedGroupMember, error) {
	g, err := v.describedGroup()
	if err != nil {
		return g, kadm.DescribedGroupMember{}, err
	}
	for _, m := range g.Members {
		if m.MemberID == v.r.PathValue("consumer") {
			return g, m, nil
		}
	}
	return g, kadm.DescribedGroupMember{}, errf(http.StatusNotFound, http.StatusNotFound, "Consumer %s cannot be found.", v.r.PathValue("consumer"))
}

// configChanges is the body of a configs:alter call.
func (v *v3Call) configChanges() ([]kadm.AlterConfig, bool, error) {
	var req struct {
		Data []struct {
			Name      string  `json:"name"`
			Value     *string `json:"value"`
			Operation *string `json:"operation"`
		} `json:"data"`
		ValidateOnly bool `json:"validate_only"`
	}
	if err := v.decode(&req, true); err != nil {
		return nil, false, err
	}
	changes := make([]kadm.AlterConfig, 0, len(req.Data))
	for _, d := range req.Data {
		op := kadm.SetConfig
		if d.Operation != nil {
			switch *d.Operation {
			case "SET":
			case "DELETE":
				op = kadm.DeleteConfig
			default:
				return nil, false, errf(http.StatusBadRequest, http.StatusBadRequest, "Operation %s is not SET or DELETE.", *d.Operation)
			}
		}
		changes = append(changes, kadm.AlterConfig{Op: op, Name: d.Name, Value: d.Value})
	}
	return changes, req.ValidateOnly, nil
}
