package restproxy

// v3 (/v3/clusters/...): the cluster, its brokers and their configs,
// topics (list, create, delete) with their configs and partitions, in the
// shapes of Confluent's v3 entities: every resource has kind, metadata
// (self and a crn resource_name) and links to related collections.

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

type v3Meta struct {
	Self         string  `json:"self"`
	ResourceName *string `json:"resource_name,omitempty"`
}

type v3ListMeta struct {
	Self string  `json:"self"`
	Next *string `json:"next"`
}

type v3Rel struct {
	Related string `json:"related"`
}

type v3List struct {
	Kind     string     `json:"kind"`
	Metadata v3ListMeta `json:"metadata"`
	Data     any        `json:"data"`
}

type v3Cluster struct {
	Kind                   string `json:"kind"`
	Metadata               v3Meta `json:"metadata"`
	ClusterID              string `json:"cluster_id"`
	Controller             *v3Rel `json:"controller"`
	ACLs                   v3Rel  `json:"acls"`
	Brokers                v3Rel  `json:"brokers"`
	BrokerConfigs          v3Rel  `json:"broker_configs"`
	ConsumerGroups         v3Rel  `json:"consumer_groups"`
	Topics                 v3Rel  `json:"topics"`
	PartitionReassignments v3Rel  `json:"partition_reassignments"`
}

type v3Broker struct {
	Kind              string  `json:"kind"`
	Metadata          v3Meta  `json:"metadata"`
	ClusterID         string  `json:"cluster_id"`
	BrokerID          int32   `json:"broker_id"`
	Host              string  `json:"host"`
	Port              int32   `json:"port"`
	Rack              *string `json:"rack"`
	Configs           v3Rel   `json:"configs"`
	PartitionReplicas v3Rel   `json:"partition_replicas"`
}

type v3Config struct {
	Kind        string      `json:"kind"`
	Metadata    v3Meta      `json:"metadata"`
	ClusterID   string      `json:"cluster_id"`
	TopicName   string      `json:"topic_name,omitempty"`
	BrokerID    *int32      `json:"broker_id,omitempty"`
	ConfigType  string      `json:"config_type,omitempty"`
	Name        string      `json:"name"`
	Value       *string     `json:"value"`
	IsDefault   bool        `json:"is_default"`
	IsReadOnly  bool        `json:"is_read_only"`
	IsSensitive bool        `json:"is_sensitive"`
	Source      string      `json:"source"`
	Synonyms    []v3Synonym `json:"synonyms"`
}

type v3Synonym struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

type v3Topic struct {
	Kind                   string   `json:"kind"`
	Metadata               v3Meta   `json:"metadata"`
	ClusterID              string   `json:"cluster_id"`
	TopicName              string   `json:"topic_name"`
	IsInternal             bool     `json:"is_internal"`
	ReplicationFactor      int      `json:"replication_factor"`
	PartitionsCount        int      `json:"partitions_count"`
	Partitions             v3Rel    `json:"partitions"`
	Configs                v3Rel    `json:"configs"`
	PartitionReassignments v3Rel    `json:"partition_reassignments"`
	AuthorizedOperations   []string `json:"authorized_operations"`
}

type v3Partition struct {
	Kind        string `json:"kind"`
	Metadata    v3Meta `json:"metadata"`
	ClusterID   string `json:"cluster_id"`
	TopicName   string `json:"topic_name"`
	PartitionID int32  `json:"partition_id"`
	Leader      *v3Rel `json:"leader"`
	Replicas    v3Rel  `json:"replicas"`
	Reassign    v3Rel  `json:"reassignment"`
}

// v3Call is a call under /v3/clusters/{cluster_id}: the cluster's metadata
// and the URL and crn prefixes of its resources.
type v3Call struct {
	*call
	md   kadm.Metadata
	base string // .../v3/clusters/<id>
	crn  string // crn:///kafka=<id>
}

func (v *v3Call) meta(path, crn string) v3Meta {
	name := v.crn + crn
	return v3Meta{Self: v.base + path, ResourceName: &name}
}

func (v *v3Call) list(kind, path string, data any) error {
	writeJSON(v.w, http.StatusOK, ctV3, v3List{Kind: kind, Metadata: v3ListMeta{Self: v.base + path}, Data: data})
	return nil
}

func (v *v3Call) reply(status int, data any) error {
	writeJSON(v.w, status, ctV3, data)
	return nil
}

// v3 registers a route under /v3/clusters/{cluster_id}; a cluster id that
// is not this cluster's is 404. The records route streams, so its body has
// no deadline.
func (p *Proxy) v3(pattern string, h func(v *v3Call) error) {
	method, rest, _ := strings.Cut(pattern, " ")
	p.handleBody(method+" /v3/clusters/{cluster_id}"+rest, ctV3, !strings.HasSuffix(rest, "/records"), func(c *call) error {
		v, err := c.v3Cluster()
		if err != nil {
			return err
		}
		if id := c.r.PathValue("cluster_id"); id != v.md.Cluster {
			return errf(http.StatusNotFound, http.StatusNotFound, "Cluster %s cannot be found.", id)
		}
		return h(v)
	})
}

func (c *call) v3Cluster(topics ...string) (*v3Call, error) {
	adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	md, err := adm.Metadata(c.ctx, topics...)
	if err != nil {
		return nil, kafkaError(err)
	}
	return &v3Call{call: c, md: md, base: c.baseURL() + "/v3/clusters/" + md.Cluster, crn: "crn:///kafka=" + md.Cluster}, nil
}

func (v *v3Call) cluster() v3Cluster {
	cl := v3Cluster{
		Kind: "KafkaCluster", Metadata: v.meta("", ""), ClusterID: v.md.Cluster,
		ACLs: v3Rel{v.base + "/acls"}, Brokers: v3Rel{v.base + "/brokers"}, BrokerConfigs: v3Rel{v.base + "/broker-configs"},
		ConsumerGroups: v3Rel{v.base + "/consumer-groups"}, Topics: v3Rel{v.base + "/topics"},
		PartitionReassignments: v3Rel{v.base + "/topics/-/partitions/-/reassignment"},
	}
	if v.md.Controller >= 0 {
		cl.Controller = &v3Rel{v.base + "/brokers/" + strconv.Itoa(int(v.md.Controller))}
	}
	return cl
}

func (v *v3Call) broker(b kadm.BrokerDetail) v3Broker {
	id := strconv.Itoa(int(b.NodeID))
	return v3Broker{
		Kind: "KafkaBroker", Metadata: v.meta("/brokers/"+id, "/broker="+id), ClusterID: v.md.Cluster,
		BrokerID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack,
		Configs: v3Rel{v.base + "/brokers/" + id + "/configs"}, PartitionReplicas: v3Rel{v.base + "/brokers/" + id + "/partition-replicas"},
	}
}

func (v *v3Call) topic(td kadm.TopicDetail) v3Topic {
	rf := 0
	for _, pd := range td.Partitions {
		rf = max(rf, len(pd.Replicas))
	}
	path := "/topics/" + td.Topic
	return v3Topic{
		Kind: "KafkaTopic", Metadata: v.meta(path, "/topic="+td.Topic), ClusterID: v.md.Cluster,
		TopicName: td.Topic, IsInternal: td.IsInternal, ReplicationFactor: rf, PartitionsCount: len(td.Partitions),
		Partitions: v3Rel{v.base + path + "/partitions"}, Configs: v3Rel{v.base + path + "/configs"},
		PartitionReassignments: v3Rel{v.base + path + "/partitions/-/reassignment"}, AuthorizedOperations: []string{},
	}
}

func (v *v3Call) partition(pd kadm.PartitionDetail) v3Partition {
	id := strconv.Itoa(int(pd.Partition))
	path := "/topics/" + pd.Topic + "/partitions/" + id
	out := v3Partition{
		Kind: "KafkaPartition", Metadata: v.meta(path, "/topic="+pd.Topic+"/partition="+id), ClusterID: v.md.Cluster,
		TopicName: pd.Topic, PartitionID: pd.Partition,
		Replicas: v3Rel{v.base + path + "/replicas"}, Reassign: v3Rel{v.base + path + "/reassignment"},
	}
	if pd.Leader >= 0 {
		out.Leader = &v3Rel{v.base + path + "/replicas/" + strconv.Itoa(int(pd.Leader))}
	}
	return out
}

func (p *Proxy) routesV3() {
	p.handle("GET /v3/clusters", ctV3, func(c *call) error {
		v, err := c.v3Cluster()
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, ctV3, v3List{Kind: "KafkaClusterList", Metadata: v3ListMeta{Self: c.baseURL() + "/v3/clusters"}, Data: []v3Cluster{v.cluster()}})
		return nil
	})
	p.v3("GET ", func(v *v3Call) error { return v.reply(http.StatusOK, v.cluster()) })
	p.v3("GET /brokers", func(v *v3Call) error {
		out := []v3Broker{}
		for _, b := range v.md.Brokers {
			out = append(out, v.broker(b))
		}
		return v.list("KafkaBrokerList", "/brokers", out)
	})
	p.v3("GET /brokers/{broker_id}", func(v *v3Call) error {
		b, err := v.brokerParam()
		if err != nil {
			return err
		}
		return v.reply(http.StatusOK, v.broker(b))
	})
	p.routesV3Topics()
	p.routesV3Configs()
	p.routesV3Groups()
	p.routesV3ACLs()
	p.routesV3Records()
	p.routesV3Reassignments()
	p.routesV3RecordsBatch()
}

func (v *v3Call) brokerParam() (kadm.BrokerDetail, error) {
	id, err := strconv.ParseInt(v.r.PathValue("broker_id"), 10, 32)
	if err == nil {
		for _, b := range v.md.Brokers {
			if b.NodeID == int32(id) {
				return b, nil
			}
		}
	}
	return kadm.BrokerDetail{}, errf(http.StatusNotFound, http.StatusNotFound, "Broker %s cannot be found.", v.r.PathValue("broker_id"))
}

// topicParam is the path's topic (404 when it does not exist).
func (v *v3Call) topicParam() (kadm.TopicDetail, error) {
	td, err := v.call.topic(v.r.PathValue("topic_name"))
	if err != nil {
		return td, err
	}
	return td, nil
}

type v3CreateTopic struct {
	TopicName         string `json:"topic_name"`
	PartitionsCount   *int32 `json:"partitions_count"`
	ReplicationFactor *int16 `json:"replication_factor"`
	Configs           []struct {
		Name  string  `json:"name"`
		Value *string `json:"value"`
	} `json:"configs"`
	ValidateOnly bool `json:"validate_only"`
}

func (p *Proxy) routesV3Topics() {
	p.v3("GET /topics", func(v *v3Call) error {
		adm := v.uc.adm // v3Cluster created the client
		tds, err := adm.ListTopics(v.ctx)
		if err != nil {
			return kafkaError(err)
		}
		out := []v3Topic{}
		for _, td := range tds.Sorted() {
			out = append(out, v.topic(td))
		}
		return v.list("KafkaTopicList", "/topics", out)
	})
	p.v3("POST /topics", func(v *v3Call) error {
		var req v3CreateTopic
		if err := v.decode(&req, true); err != nil {
			return err
		}
		if req.TopicName == "" {
			return errf(http.StatusBadRequest, http.StatusBadRequest, "Payload error. topic_name cannot be null or empty.")
		}
		parts, rf := int32(-1), int16(-1)
		if req.PartitionsCount != nil {
			parts = *req.PartitionsCount
		}
		if req.ReplicationFactor != nil {
			rf = *req.ReplicationFactor
		}
		configs := map[string]*string{}
		for _, cf := range req.Configs {
			configs[cf.Name] = cf.Value
		}
		adm := v.uc.adm // v3Cluster created the client
		create := adm.CreateTopics
		if req.ValidateOnly {
			create = adm.ValidateCreateTopics
		}
		resps, err := create(v.ctx, parts, rf, configs, req.TopicName)
		resp, err := onlyResult(resps, err, req.TopicName, func(r kadm.CreateTopicResponse) error { return r.Err })
		if err != nil {
			return err
		}
		td := kadm.TopicDetail{Topic: req.TopicName, Partitions: kadm.PartitionDetails{}}
		for i := range resp.NumPartitions {
			td.Partitions[i] = kadm.PartitionDetail{Topic: req.TopicName, Partition: i, Replicas: make([]int32, resp.ReplicationFactor)}
		}
		return v.reply(http.StatusCreated, v.topic(td))
	})
	p.v3("GET /topics/{topic_name}", func(v *v3Call) error {
		td, err := v.topicParam()
		if err != nil {
			return err
		}
		return v.reply(http.StatusOK, v.topic(td))
	})
	p.v3("PATCH /topics/{topic_name}", func(v *v3Call) error {
		var req struct {
			PartitionsCount int `json:"partitions_count"`
		}
		if err := v.decode(&req, true); err != nil {
			return err
		}
		td, err := v.topicParam()
		if err != nil {
			return err
		}
		resps, err := v.uc.adm.UpdatePartitions(v.ctx, req.PartitionsCount, td.Topic)
		if _, err := onlyResult(resps, err, td.Topic, func(r kadm.CreatePartitionsResponse) error { return r.Err }); err != nil {
			return err
		}
		if td, err = v.topicParam(); err != nil {
			return err
		}
		return v.reply(http.StatusOK, v.topic(td))
	})
	p.v3("DELETE /topics/{topic_name}", func(v *v3Call) error {
		adm := v.uc.adm // v3Cluster created the client
		resp, err := adm.DeleteTopic(v.ctx, v.r.PathValue("topic_name"))
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return kafkaError(err)
		}
		v.w.WriteHeader(http.StatusNoContent)
		return nil
	})
	p.v3("GET /topics/{topic_name}/partitions", func(v *v3Call) error {
		td, err := v.topicParam()
		if err != nil {
			return err
		}
		out := []v3Partition{}
		for _, pd := range td.Partitions.Sorted() {
			out = append(out, v.partition(pd))
		}
		return v.list("KafkaPartitionList", "/topics/"+td.Topic+"/partitions", out)
	})
	p.v3("GET /topics/{topic_name}/partitions/{partition}", func(v *v3Call) error {
		pd, err := v.partitionDetail()
		if err != nil {
			return err
		}
		return v.reply(http.StatusOK, v.partition(pd))
	})
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// resultsOn is a kadm result set: one result per resource name.
type resultsOn[R any] interface {
	On(name string, fn func(*R) error) (R, error)
}

// onlyResult is the result for name of a kadm call that returned results
// and err, failing (as Confluent's error) on the call's error, a missing
// result or the result's own error (errOf).
func onlyResult[R any, S resultsOn[R]](results S, err error, name string, errOf func(R) error) (R, error) {
	var r R
	if err == nil {
		r, err = results.On(name, nil)
	}
	if err == nil {
		err = errOf(r)
	}
	if err != nil {
		return r, kafkaError(err)
	}
	return r, nil
}
