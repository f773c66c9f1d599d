package api

// Authorized-operation bitfields for Metadata and DescribeCluster. Without
// ACLs every operation a resource type has is allowed. Bit n is ACL operation
// code n (READ=3, WRITE=4, CREATE=5, DELETE=6, ALTER=7, DESCRIBE=8,
// CLUSTER_ACTION=9, DESCRIBE_CONFIGS=10, ALTER_CONFIGS=11, IDEMPOTENT_WRITE=12,
// CREATE_TOKENS=13, DESCRIBE_TOKENS=14).

// authzOmitted is Kafka's value when authorized operations were not requested.
const authzOmitted = int32(-2147483648)

func bits(ops ...uint) int32 {
	var v int32
	for _, o := range ops {
		v |= 1 << o
	}
	return v
}

var (
	clusterOps = bits(5, 7, 8, 9, 10, 11, 12, 13, 14)
	topicOps   = bits(3, 4, 5, 6, 7, 8, 10, 11)
)

func authorizedOps(requested bool, ops int32) int32 {
	if !requested {
		return authzOmitted
	}
	return ops
}
