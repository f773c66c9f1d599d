package restproxy

// v3 consumer groups (with their consumers and lag summaries) and ACLs
// (list, create, delete), in Confluent's shapes.

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type v3Group struct {
	Kind              string `json:"kind"`
	Metadata          v3Meta `json:"metadata"`
	ClusterID         string `json:"cluster_id"`
	ConsumerGroupID   string `json:"consumer_group_id"`
	IsSimple          bool   `json:"is_simple"`
	PartitionAssignor string `json:"partition_assignor"`
	State             string `json:"state"`
	Coordinator       *v3Rel `json:"coordinator"`
	Consumers         v3Rel  `json:"consumers"`
	LagSummary        v3Rel  `json:"lag_summary"`
}

type v3Consumer struct {
	Kind            string  `json:"kind"`
	Metadata        v3Meta  `json:"metadata"`
	ClusterID       string  `json:"cluster_id"`
	ConsumerGroupID string  `json:"consumer_group_id"`
	ConsumerID      string  `json:"consumer_id"`
	InstanceID      *string `json:"instance_id"`
	ClientID        string  `json:"client_id"`
	Assignments     v3Rel   `json:"assignments"`
}

type v3LagSummary struct {
	Kind              string  `json:"kind"`
	Metadata          v3Meta  `json:"metadata"`
	ClusterID         string  `json:"cluster_id"`
	ConsumerGroupID   string  `json:"consumer_group_id"`
	MaxLagConsumerID  string  `json:"max_lag_consumer_id"`
	MaxLagInstanceID  *string `json:"max_lag_instance_id"`
	MaxLagClientID    string  `json:"max_lag_client_id"`
	MaxLagTopicName   string  `json:"max_lag_topic_name"`
	MaxLagPartitionID int32   `json:"max_lag_partition_id"`
	MaxLag            int64   `json:"max_lag"`
	TotalLag          int64   `json:"total_lag"`
	MaxLagConsumer    v3Rel   `json:"max_lag_consumer"`
	MaxLagPartition   v3Rel   `json:"max_lag_partition"`
}

// upperSnake turns Kafka's group state (CompletingRebalance) into
// Confluent's enum name (COMPLETING_REBALANCE).
func upperSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

func (v *v3Call) group(g kadm.DescribedGroup) v3Group {
	path := "/consumer-groups/" + g.Group
	out := v3Group{
		Kind: "KafkaConsumerGroup", Metadata: v.meta(path, "/consumer-group="+g.Group), ClusterID: v.md.Cluster,
		ConsumerGroupID: g.Group, IsSimple: g.ProtocolType == "", PartitionAssignor: g.Protocol,
		State: upperSnake(g.State), Consumers: v3Rel{v.base + path + "/consumers"}, LagSummary: v3Rel{v.base + path + "/lag-summary"},
	}
	if g.Coordinator.NodeID >= 0 {
		out.Coordinator = &v3Rel{v.base + "/brokers/" + strconv.Itoa(int(g.Coordinator.NodeID))}
	}
	return out
}

func (v *v3Call) consumer(group string, m kadm.DescribedGroupMember) v3Consumer {
	path := "/consumer-groups/" + group + "/consumers/" + m.MemberID
	return v3Consumer{
		Kind: "KafkaConsumer", Metadata: v.meta(path, "/consumer-group="+group+"/consumer="+m.MemberID), ClusterID: v.md.Cluster,
		ConsumerGroupID: group, ConsumerID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID,
		Assignments: v3Rel{v.base + path + "/assignments"},
	}
}

// describedGroup is the path's group (404 when the coordinator does not
// know it).
func (v *v3Call) describedGroup() (kadm.DescribedGroup, error) {
	adm := v.uc.adm // v3Cluster created the client
	name := v.r.PathValue("group")
	gs, err := adm.DescribeGroups(v.ctx, name)
	if err != nil {
		return kadm.DescribedGroup{}, kafkaError(err)
	}
	g, ok := gs[name]
	if !ok || g.State == "Dead" {
		return g, errf(http.StatusNotFound, codeGroupNotFound, "Consumer group %s cannot be found.", name)
	}
	if g.Err != nil {
		return g, kafkaError(g.Err)
	}
	return g, nil
}

func (p *Proxy) routesV3Groups() {
	p.v3("GET /consumer-groups", func(v *v3Call) error {
		adm := v.uc.adm // v3Cluster created the client
		listed, err := adm.ListGroups(v.ctx)
		if err != nil {
			return kafkaError(err)
		}
		out := []v3Group{}
		if groups := listed.Groups(); len(groups) > 0 {
			gs, err := adm.DescribeGroups(v.ctx, groups...)
			if err != nil {
				return kafkaError(err)
			}
			for _, name := range sortedKeys(gs) {
				out = append(out, v.group(gs[name]))
			}
		}
		return v.list("KafkaConsumerGroupList", "/consumer-groups", out)
	})
	p.v3("GET /consumer-groups/{group}", func(v *v3Call) error {
		g, err := v.describedGroup()
		if err != nil {
			return err
		}
		return v.reply(http.StatusOK, v.group(g))
	})
	p.v3("GET /consumer-groups/{group}/consumers", func(v *v3Call) error {
		g, err := v.describedGroup()
		if err != nil {
			return err
		}
		out := []v3Consumer{}
		for _, m := range g.Members {
			out = append(out, v.consumer(g.Group, m))
		}
		return v.list("KafkaConsumerList", "/consumer-groups/"+g.Group+"/consumers", out)
	})
	p.v3("GET /consumer-groups/{group}/lag-summary", func(v *v3Call) error {
		g, lags, err := v.groupLags()
		if err != nil {
			return err
		}
		path := "/consumer-groups/" + g.Group + "/lag-summary"
		out := v3LagSummary{Kind: "KafkaConsumerGroupLagSummary", Metadata: v.meta(path, "/consumer-group="+g.Group+"/lag-summary"),
			ClusterID: v.md.Cluster, ConsumerGroupID: g.Group, MaxLagPartitionID: -1}
		for i, ml := range lags {
			out.TotalLag += ml.Lag
			if i == 0 || ml.Lag > out.MaxLag {
				out.MaxLag, out.MaxLagTopicName, out.MaxLagPartitionID = ml.Lag, ml.Topic, ml.Partition
				out.MaxLagConsumerID, out.MaxLagInstanceID, out.MaxLagClientID = memberIDs(ml.Member)
			}
		}
		out.MaxLagConsumer = v3Rel{v.base + "/consumer-groups/" + g.Group + "/consumers/" + out.MaxLagConsumerID}
		out.MaxLagPartition = v3Rel{v.base + "/topics/" + out.MaxLagTopicName + "/partitions/" + strconv.Itoa(int(out.MaxLagPartitionID))}
		return v.reply(http.StatusOK, out)
	})
	p.v3("GET /consumer-groups/{group}/lags", func(v *v3Call) error {
		g, lags, err := v.groupLags()
		if err != nil {
			return err
		}
		out := []v3Lag{}
		for _, ml := range lags {
			out = append(out, v.lag(g.Group, ml))
		}
		return v.list("KafkaConsumerLagList", "/consumer-groups/"+g.Group+"/lags", out)
	})
	p.v3("GET /consumer-groups/{group}/lags/{topic_name}/partitions/{partition}", func(v *v3Call) error {
		g, lags, err := v.groupLags()
		if err != nil {
			return err
		}
		part, err := partitionParam(v.call)
		if err != nil {
			return err
		}
		for _, ml := range lags {
			if ml.Topic == v.r.PathValue("topic_name") && ml.Partition == part {
				return v.reply(http.StatusOK, v.lag(g.Group, ml))
			}
		}
		return errf(http.StatusNotFound, http.StatusNotFound, "Consumer lag for %s-%d cannot be found.", v.r.PathValue("topic_name"), part)
	})
}

type v3Lag struct {
	Kind            string  `json:"kind"`
	Metadata        v3Meta  `json:"metadata"`
	ClusterID       string  `json:"cluster_id"`
	ConsumerGroupID string  `json:"consumer_group_id"`
	TopicName       string  `json:"topic_name"`
	PartitionID     int32   `json:"partition_id"`
	CurrentOffset   int64   `json:"current_offset"`
	LogEndOffset    int64   `json:"log_end_offset"`
	Lag             int64   `json:"lag"`
	ConsumerID      string  `json:"consumer_id"`
	InstanceID      *string `json:"instance_id"`
	ClientID        string  `json:"client_id"`
}

// groupLags is the path's group and the lag of each partition it has
// committed or is assigned, sorted (partitions whose lag is unknown left
// out).
func (v *v3Call) groupLags() (kadm.DescribedGroup, []kadm.GroupMemberLag, error) {
	g, err := v.describedGroup()
	if err != nil {
		return g, nil, err
	}
	lags, err := v.uc.adm.Lag(v.ctx, g.Group)
	if err != nil {
		return g, nil, kafkaError(err)
	}
	l := lags[g.Group]
	if err := l.Error(); err != nil {
		return g, nil, kafkaError(err)
	}
	var out []kadm.GroupMemberLag
	for _, ml := range l.Lag.Sorted() {
		if ml.Err == nil && ml.Lag >= 0 {
			out = append(out, ml)
		}
	}
	return g, out, nil
}

// memberIDs is a lag's member's ids ("" when no member owns the
// partition).
func memberIDs(m *kadm.DescribedGroupMember) (consumer string, instance *string, client string) {
	if m == nil {
		return "", nil, ""
	}
	return m.MemberID, m.InstanceID, m.ClientID
}

func (v *v3Call) lag(group string, ml kadm.GroupMemberLag) v3Lag {
	id := strconv.Itoa(int(ml.Partition))
	out := v3Lag{
		Kind:      "KafkaConsumerLag",
		Metadata:  v.meta("/consumer-groups/"+group+"/lags/"+ml.Topic+"/partitions/"+id, "/consumer-group="+group+"/lag="+ml.Topic+"/partition="+id),
		ClusterID: v.md.Cluster, ConsumerGroupID: group, TopicName: ml.Topic, PartitionID: ml.Partition,
		CurrentOffset: ml.Commit.At, LogEndOffset: ml.End.Offset, Lag: ml.Lag,
	}
	out.ConsumerID, out.InstanceID, out.ClientID = memberIDs(ml.Member)
	return out
}

// v3ACL is Confluent's AclData (and, without kind and metadata, its
// CreateAclRequest).
type v3ACL struct {
	Kind         string  `json:"kind,omitempty"`
	Metadata     *v3Meta `json:"metadata,omitempty"`
	ClusterID    string  `json:"cluster_id,omitempty"`
	ResourceType string  `json:"resource_type"`
	ResourceName string  `json:"resource_name"`
	PatternType  string  `json:"pattern_type"`
	Principal    string  `json:"principal"`
	Host         string  `json:"host"`
	Operation    string  `json:"operation"`
	Permission   string  `json:"permission"`
}

// aclFilter is an ACL filter from the query (absent fields match any).
func aclFilter(q url.Values) (kmsg.DescribeACLsRequest, error) {
	req := kmsg.NewDescribeACLsRequest()
	var err error
	parse := func(name string, def string, f func(string) error) {
		if err != nil {
			return
		}
		v := q.Get(name)
		if v == "" {
			v = def
		}
		if e := f(v); e != nil {
			err = errf(http.StatusBadRequest, http.StatusBadRequest, "%s: %v", name, e)
		}
	}
	parse("resource_type", "ANY", func(s string) (e error) { req.ResourceType, e = kmsg.ParseACLResourceType(s); return })
	parse("pattern_type", "ANY", func(s string) (e error) { req.ResourcePatternType, e = kmsg.ParseACLResourcePatternType(s); return })
	parse("operation", "ANY", func(s string) (e error) { req.Operation, e = kmsg.ParseACLOperation(s); return })
	parse("permission", "ANY", func(s string) (e error) { req.PermissionType, e = kmsg.ParseACLPermissionType(s); return })
	for name, dst := range map[string]**string{"resource_name": &req.ResourceName, "principal": &req.Principal, "host": &req.Host} {
		if v := q.Get(name); v != "" {
			*dst = &v
		}
	}
	return req, err
}

func (v *v3Call) acl(typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) v3ACL {
	a := v3ACL{Kind: "KafkaAcl", ClusterID: v.md.Cluster, ResourceType: typ.String(), ResourceName: name, PatternType: pattern.String(),
		Principal: principal, Host: host, Operation: op.String(), Permission: perm.String()}
	q := url.Values{}
	for k, val := range map[string]string{"resource_type": a.ResourceType, "resource_name": name, "pattern_type": a.PatternType,
		"principal": principal, "host": host, "operation": a.Operation, "permission": a.Permission} {
		q.Set(k, val)
	}
	a.Metadata = &v3Meta{Self: v.base + "/acls?" + q.Encode()}
	return a
}

func (p *Proxy) routesV3ACLs() {
	p.v3("GET /acls", func(v *v3Call) error {
		req, err := aclFilter(v.r.URL.Query())
		if err != nil {
			return err
		}
		uc := v.uc
		resp, err := req.RequestWith(v.ctx, uc.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return kafkaError(err)
		}
		out := []v3ACL{}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				out = append(out, v.acl(r.ResourceType, r.ResourceName, r.ResourcePatternType, a.Principal, a.Host, a.Operation, a.PermissionType))
			}
		}
		return v.list("KafkaAclList", "/acls?"+v.r.URL.RawQuery, out)
	})
	p.v3("POST /acls", func(v *v3Call) error {
		var in v3ACL
		if err := v.decode(&in, true); err != nil {
			return err
		}
		q := url.Values{}
		// In the body's field order, so a body missing several is always
		// answered about the same one.
		for _, kv := range [][2]string{{"resource_type", in.ResourceType}, {"resource_name", in.ResourceName}, {"pattern_type", in.PatternType},
			{"principal", in.Principal}, {"host", in.Host}, {"operation", in.Operation}, {"permission", in.Permission}} {
			k, val := kv[0], kv[1]
			if val == "" {
				return errf(http.StatusBadRequest, http.StatusBadRequest, "Payload error. %s cannot be null or empty.", k)
			}
			q.Set(k, val)
		}
		f, err := aclFilter(q)
		if err != nil {
			return err
		}
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = f.ResourceType, in.ResourceName, f.ResourcePatternType
		c.Principal, c.Host, c.Operation, c.PermissionType = in.Principal, in.Host, f.Operation, f.PermissionType
		req := kmsg.NewCreateACLsRequest()
		req.Creations = append(req.Creations, c)
		uc := v.uc
		resp, err := req.RequestWith(v.ctx, uc.cl)
		if err == nil && len(resp.Results) == 1 {
			err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
		}
		if err != nil {
			return kafkaError(err)
		}
		a := v.acl(f.ResourceType, in.ResourceName, f.ResourcePatternType, in.Principal, in.Host, f.Operation, f.PermissionType)
		v.w.Header().Set("Location", a.Metadata.Self)
		return v.reply(http.StatusCreated, a)
	})
	p.v3("DELETE /acls", func(v *v3Call) error {
		f, err := aclFilter(v.r.URL.Query())
		if err != nil {
			return err
		}
		df := kmsg.NewDeleteACLsRequestFilter()
		df.ResourceType, df.ResourceName, df.ResourcePatternType = f.ResourceType, f.ResourceName, f.ResourcePatternType
		df.Principal, df.Host, df.Operation, df.PermissionType = f.Principal, f.Host, f.Operation, f.PermissionType
		req := kmsg.NewDeleteACLsRequest()
		req.Filters = append(req.Filters, df)
		uc := v.uc
		resp, err := req.RequestWith(v.ctx, uc.cl)
		out := []v3ACL{}
		if err == nil {
			for _, r := range resp.Results {
				if err = kerr.ErrorForCode(r.ErrorCode); err != nil {
					break
				}
				for _, m := range r.MatchingACLs {
					out = append(out, v.acl(m.ResourceType, m.ResourceName, m.ResourcePatternType, m.Principal, m.Host, m.Operation, m.PermissionType))
				}
			}
		}
		if err != nil {
			return kafkaError(err)
		}
		return v.reply(http.StatusOK, struct {
			Data []v3ACL `json:"data"`
		}{out})
	})
}
