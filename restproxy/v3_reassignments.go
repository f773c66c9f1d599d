package restproxy

// v3 partition reassignments (read-only, as Confluent's): the partitions
// being reassigned, with their adding and removing replicas, from
// ListPartitionReassignments. A partition not being reassigned is not
// listed, and asked for alone is 404.

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type v3Reassignment struct {
	Kind             string  `json:"kind"`
	Metadata         v3Meta  `json:"metadata"`
	ClusterID        string  `json:"cluster_id"`
	TopicName        string  `json:"topic_name"`
	PartitionID      int32   `json:"partition_id"`
	AddingReplicas   []int32 `json:"adding_replicas"`
	RemovingReplicas []int32 `json:"removing_replicas"`
	Replicas         v3Rel   `json:"replicas"`
}

func (p *Proxy) routesV3Reassignments() {
	p.v3("GET /topics/-/partitions/-/reassignment", func(v *v3Call) error {
		out, err := v.reassignments(nil)
		if err != nil {
			return err
		}
		return v.list("KafkaReassignmentList", "/topics/-/partitions/-/reassignment", out)
	})
	p.v3("GET /topics/{topic_name}/partitions/-/reassignment", func(v *v3Call) error {
		td, err := v.topicParam()
		if err != nil {
			return err
		}
		t := kmsg.NewListPartitionReassignmentsRequestTopic()
		t.Topic = td.Topic
		t.Partitions = td.Partitions.Numbers()
		out, err := v.reassignments([]kmsg.ListPartitionReassignmentsRequestTopic{t})
		if err != nil {
			return err
		}
		return v.list("KafkaReassignmentList", "/topics/"+td.Topic+"/partitions/-/reassignment", out)
	})
	p.v3("GET /topics/{topic_name}/partitions/{partition}/reassignment", func(v *v3Call) error {
		pd, err := v.partitionDetail()
		if err != nil {
			return err
		}
		t := kmsg.NewListPartitionReassignmentsRequestTopic()
		t.Topic, t.Partitions = pd.Topic, []int32{pd.Partition}
		out, err := v.reassignments([]kmsg.ListPartitionReassignmentsRequestTopic{t})
		if err != nil {
			return err
		}
		if len(out) == 0 {
			return errf(http.StatusNotFound, http.StatusNotFound, "Reassignment for partition %s-%d cannot be found.", pd.Topic, pd.Partition)
		}
		return v.reply(http.StatusOK, out[0])
	})
}

// reassignments lists the ongoing reassignments of topics (nil: all).
func (v *v3Call) reassignments(topics []kmsg.ListPartitionReassignmentsRequestTopic) ([]v3Reassignment, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(v.p.cfg.RequestTimeout.Milliseconds())
	req.Topics = topics
	resp, err := req.RequestWith(v.ctx, v.uc.cl)
	if err != nil {
		return nil, kafkaError(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, kafkaError(err)
	}
	out := []v3Reassignment{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			id := strconv.Itoa(int(p.Partition))
			path := "/topics/" + t.Topic + "/partitions/" + id
			out = append(out, v3Reassignment{
				Kind: "KafkaReassignment", Metadata: v.meta(path+"/reassignment", "/topic="+t.Topic+"/partition="+id),
				ClusterID: v.md.Cluster, TopicName: t.Topic, PartitionID: p.Partition,
				AddingReplicas: nonNil(p.AddingReplicas), RemovingReplicas: nonNil(p.RemovingReplicas),
				Replicas: v3Rel{v.base + path + "/replicas"},
			})
		}
	}
	slices.SortFunc(out, func(a, b v3Reassignment) int {
		if a.TopicName != b.TopicName {
			if a.TopicName < b.TopicName {
				return -1
			}
			return 1
		}
		return int(a.PartitionID - b.PartitionID)
	})
	return out, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
