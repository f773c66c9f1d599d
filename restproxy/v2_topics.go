package restproxy

// v2 metadata: GET /topics, /topics/{topic}, /topics/{topic}/partitions,
// /topics/{topic}/partitions/{partition} and /brokers, in Confluent's
// shapes (GetTopicResponse, GetPartitionResponse, BrokerList).

import (
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

type v2Replica struct {
	Broker int32 `json:"broker"`
	Leader bool  `json:"leader"`
	InSync bool  `json:"in_sync"`
}

type v2Partition struct {
	Partition int32       `json:"partition"`
	Leader    int32       `json:"leader"`
	Replicas  []v2Replica `json:"replicas"`
}

type v2Topic struct {
	Name       string            `json:"name"`
	Configs    map[string]string `json:"configs"`
	Partitions []v2Partition     `json:"partitions"`
}

func (p *Proxy) routesV2() {
	p.routesV2Produce()
	p.routesV2Consumers()
	p.handle("GET /topics", ctV2, func(c *call) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		tds, err := adm.ListTopics(c.ctx)
		if err != nil {
			return kafkaError(err)
		}
		writeJSON(c.w, http.StatusOK, ctV2, tds.Names())
		return nil
	})
	p.handle("GET /topics/{topic}", ctV2, func(c *call) error {
		td, err := c.topic(c.r.PathValue("topic"))
		if err != nil {
			return err
		}
		cfs, err := c.topicConfigs(td.Topic)
		if err != nil {
			return err
		}
		configs := map[string]string{}
		for _, cf := range cfs {
			configs[cf.Key] = cf.MaybeValue()
		}
		writeJSON(c.w, http.StatusOK, ctV2, v2Topic{Name: td.Topic, Configs: configs, Partitions: v2Partitions(td)})
		return nil
	})
	p.handle("GET /topics/{topic}/partitions", ctV2, func(c *call) error {
		td, err := c.topic(c.r.PathValue("topic"))
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, ctV2, v2Partitions(td))
		return nil
	})
	p.handle("GET /topics/{topic}/partitions/{partition}", ctV2, func(c *call) error {
		td, err := c.topic(c.r.PathValue("topic"))
		if err != nil {
			return err
		}
		part, err := partitionParam(c)
		if err != nil {
			return err
		}
		pd, ok := td.Partitions[part]
		if !ok {
			return errPartitionNotFound
		}
		writeJSON(c.w, http.StatusOK, ctV2, v2PartitionOf(pd))
		return nil
	})
	p.handle("GET /brokers", ctV2, func(c *call) error {
		adm, err := c.admin()
		if err != nil {
			return err
		}
		bs, err := adm.ListBrokers(c.ctx)
		if err != nil {
			return kafkaError(err)
		}
		writeJSON(c.w, http.StatusOK, ctV2, struct {
			Brokers []int32 `json:"brokers"`
		}{bs.NodeIDs()})
		return nil
	})
}

// topic is the metadata of one topic (40401 when it does not exist).
func (c *call) topic(name string) (kadm.TopicDetail, error) {
	adm, err := c.admin()
	if err != nil {
		return kadm.TopicDetail{}, err
	}
	md, err := adm.Metadata(c.ctx, name)
	if err != nil {
		return kadm.TopicDetail{}, kafkaError(err)
	}
	td, ok := md.Topics[name]
	if !ok {
		return kadm.TopicDetail{}, errTopicNotFound
	}
	if td.Err != nil {
		return kadm.TopicDetail{}, kafkaError(td.Err)
	}
	return td, nil
}

func v2Partitions(td kadm.TopicDetail) []v2Partition {
	out := []v2Partition{}
	for _, pd := range td.Partitions.Sorted() {
		out = append(out, v2PartitionOf(pd))
	}
	return out
}

func v2PartitionOf(pd kadm.PartitionDetail) v2Partition {
	out := v2Partition{Partition: pd.Partition, Leader: pd.Leader, Replicas: []v2Replica{}}
	for _, r := range pd.Replicas {
		out.Replicas = append(out.Replicas, v2Replica{Broker: r, Leader: r == pd.Leader, InSync: slices.Contains(pd.ISR, r)})
	}
	return out
}

// topicConfigs is every config of topic, with its source and synonyms.
func (c *call) topicConfigs(topic string) ([]kadm.Config, error) {
	adm, err := c.admin()
	if err != nil {
		return nil, err
	}
	rcs, err := adm.DescribeTopicConfigs(c.ctx, topic)
	rc, err := onlyResult(rcs, err, topic, func(r kadm.ResourceConfig) error { return r.Err })
	return rc.Configs, err
}
