package restproxy

// v3 topic config changes (one config: GET, PUT, DELETE; many:
// POST .../configs:alter), partition replicas, and a group's consumer with
// its assignments, in Confluent's shapes.

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
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

// alterTopicConfigs applies incremental changes to the path's topic.
func (v *v3Call) alterTopicConfigs(changes []kadm.AlterConfig, validateOnly bool) error {
	td, err := v.topicParam()
	if err != nil {
		return err
	}
	alter := v.uc.adm.AlterTopicConfigs
	if validateOnly {
		alter = v.uc.adm.ValidateAlterTopicConfigs
	}
	resps, err := alter(v.ctx, changes, td.Topic)
	if _, err := onlyResult(resps, err, td.Topic, func(r kadm.AlterConfigsResponse) error { return r.Err }); err != nil {
		return err
	}
	v.w.WriteHeader(http.StatusNoContent)
	return nil
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
	p.v3("GET /topics/{topic_name}/configs/{name}", func(v *v3Call) error {
		td, err := v.topicParam()
		if err != nil {
			return err
		}
		cfs, err := v.topicConfigs(td.Topic)
		if err != nil {
			return err
		}
		for _, cf := range cfs {
			if cf.Key == v.r.PathValue("name") {
				return v.reply(http.StatusOK, v.config(td.Topic, -1, cf))
			}
		}
		return errf(http.StatusNotFound, http.StatusNotFound, "Config %s cannot be found.", v.r.PathValue("name"))
	})
	p.v3("PUT /topics/{topic_name}/configs/{name}", func(v *v3Call) error {
		var req struct {
			Value *string `json:"value"`
		}
		if err := v.decode(&req, true); err != nil {
			return err
		}
		return v.alterTopicConfigs([]kadm.AlterConfig{{Op: kadm.SetConfig, Name: v.r.PathValue("name"), Value: req.Value}}, false)
	})
	p.v3("DELETE /topics/{topic_name}/configs/{name}", func(v *v3Call) error {
		return v.alterTopicConfigs([]kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: v.r.PathValue("name")}}, false)
	})
	p.v3("POST /topics/{topic_name}/configs:alter", func(v *v3Call) error {
		var req struct {
			Data []struct {
				Name      string  `json:"name"`
				Value     *string `json:"value"`
				Operation *string `json:"operation"`
			} `json:"data"`
			ValidateOnly bool `json:"validate_only"`
		}
		if err := v.decode(&req, true); err != nil {
			return err
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
					return errf(http.StatusBadRequest, http.StatusBadRequest, "Operation %s is not SET or DELETE.", *d.Operation)
				}
			}
			changes = append(changes, kadm.AlterConfig{Op: op, Name: d.Name, Value: d.Value})
		}
		return v.alterTopicConfigs(changes, req.ValidateOnly)
	})
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
