package zkstore

import "testing"

// ACL change notifications are byte for byte what Kafka 3.9 writes (read
// from a Kafka 3.9 cluster's ZooKeeper after kafka-acls --add): Java's
// enum name of the resource type, and the extended event's keys in
// Kafka's order.
func TestACLChangeKafkaBytes(t *testing.T) {
	for _, c := range []struct {
		r          aclResource
		root, data string
	}{
		{aclResource{"Topic", "sec-t", "LITERAL"}, "/kafka-acl-changes", "TOPIC:sec-t"},
		{aclResource{"Group", "sec-g", "LITERAL"}, "/kafka-acl-changes", "GROUP:sec-g"},
		{aclResource{"TransactionalId", "tx", "LITERAL"}, "/kafka-acl-changes", "TRANSACTIONAL_ID:tx"},
		{aclResource{"Cluster", "kafka-cluster", "LITERAL"}, "/kafka-acl-changes", "CLUSTER:kafka-cluster"},
		{aclResource{"Topic", "sec-", "PREFIXED"}, "/kafka-acl-extended-changes",
			`{"version":1,"resourceType":"TOPIC","name":"sec-","patternType":"PREFIXED"}`},
		{aclResource{"DelegationToken", "a&b", "PREFIXED"}, "/kafka-acl-extended-changes",
			`{"version":1,"resourceType":"DELEGATION_TOKEN","name":"a&b","patternType":"PREFIXED"}`},
	} {
		root, data, err := aclChange(c.r)
		if err != nil || root != c.root || string(data) != c.data {
			t.Errorf("%+v: %s %s %v, want %s %s", c.r, root, data, err, c.root, c.data)
		}
	}
}
