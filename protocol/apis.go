package protocol

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is an inclusive range of API versions.
type VersionRange struct{ Min, Max int16 }

// supported is the table ApiVersions advertises. Invariant: every key here has
// a handler in the broker that answers every version in its range; nothing
// is advertised that does not work.
var supported = map[int16]VersionRange{
	int16(kmsg.Produce):                {3, 13},
	int16(kmsg.Fetch):                  {4, 17},
	int16(kmsg.ListOffsets):            {1, 11},
	int16(kmsg.Metadata):               {0, 13},
	int16(kmsg.ApiVersions):            {0, 5},
	int16(kmsg.CreateTopics):           {0, 7},
	int16(kmsg.DeleteTopics):           {0, 6},
	int16(kmsg.InitProducerID):         {0, 5},
	int16(kmsg.DescribeConfigs):        {0, 4},
	int16(kmsg.DescribeCluster):        {0, 2},
	int16(kmsg.FindCoordinator):        {0, 6},
	int16(kmsg.JoinGroup):              {0, 9},
	int16(kmsg.SyncGroup):              {0, 5},
	int16(kmsg.Heartbeat):              {0, 4},
	int16(kmsg.LeaveGroup):             {0, 5},
	int16(kmsg.OffsetCommit):           {0, 10},
	int16(kmsg.OffsetFetch):            {0, 10},
	int16(kmsg.DescribeGroups):         {0, 6},
	int16(kmsg.ListGroups):             {0, 5},
	int16(kmsg.DeleteGroups):           {0, 3},
	int16(kmsg.OffsetDelete):           {0, 0},
	int16(kmsg.AddPartitionsToTxn):     {0, 5},
	int16(kmsg.AddOffsetsToTxn):        {0, 4},
	int16(kmsg.EndTxn):                 {0, 5},
	int16(kmsg.TxnOffsetCommit):        {0, 6},
	int16(kmsg.WriteTxnMarkers):        {1, 2},
	int16(kmsg.DescribeProducers):      {0, 0},
	int16(kmsg.DescribeTransactions):   {0, 0},
	int16(kmsg.ListTransactions):       {0, 2},
	int16(kmsg.ConsumerGroupHeartbeat): {0, 1},
	int16(kmsg.ConsumerGroupDescribe):  {0, 1},

	// KIP-932 share groups (broker/share_*.go).
	int16(kmsg.ShareGroupHeartbeat):       {0, 1},
	int16(kmsg.ShareGroupDescribe):        {0, 1},
	int16(kmsg.ShareFetch):                {0, 2},
	int16(kmsg.ShareAcknowledge):          {0, 2},
	int16(kmsg.DescribeShareGroupOffsets): {0, 1},
	int16(kmsg.AlterShareGroupOffsets):    {0, 0},
	int16(kmsg.DeleteShareGroupOffsets):   {0, 0},
	// The share coordinator's inter-broker RPCs (broker/api/share_state.go),
	// advertised in cluster mode only (broker/api/share_cluster.go).
	int16(kmsg.InitializeShareGroupState):  {0, 0},
	int16(kmsg.ReadShareGroupState):        {0, 0},
	int16(kmsg.WriteShareGroupState):       {0, 1},
	int16(kmsg.DeleteShareGroupState):      {0, 0},
	int16(kmsg.ReadShareGroupStateSummary): {0, 1},

	// Log lifecycle and admin APIs.
	int16(kmsg.DeleteRecords):           {0, 2},
	int16(kmsg.OffsetForLeaderEpoch):    {0, 4},
	int16(kmsg.AlterConfigs):            {0, 2},
	int16(kmsg.DescribeLogDirs):         {0, 4},
	int16(kmsg.CreatePartitions):        {0, 3},
	int16(kmsg.ElectLeaders):            {0, 2},
	int16(kmsg.IncrementalAlterConfigs): {0, 1},
	int16(kmsg.DescribeTopicPartitions): {0, 0},
	int16(kmsg.ListConfigResources):     {0, 1},
	// Features (KIP-584) and partition reassignment (KIP-455; one node:
	// only the replicas a partition has).
	int16(kmsg.UpdateFeatures):             {0, 2},
	int16(kmsg.AlterPartitionAssignments):  {0, 1},
	int16(kmsg.ListPartitionReassignments): {0, 0},

	// SASL (broker/network/sasl) and SCRAM credentials.
	int16(kmsg.SASLHandshake):                {0, 1},
	int16(kmsg.SASLAuthenticate):             {0, 2},
	int16(kmsg.DescribeUserSCRAMCredentials): {0, 0},
	int16(kmsg.AlterUserSCRAMCredentials):    {0, 0},

	// Client quotas (KIP-546; broker/quota).
	int16(kmsg.DescribeClientQuotas): {0, 1},
	int16(kmsg.AlterClientQuotas):    {0, 1},
	// ACLs (broker/api/acls.go; SECURITY_DISABLED without authorizer.class.name).
	int16(kmsg.DescribeACLs): {0, 3},
	int16(kmsg.CreateACLs):   {0, 3},
	int16(kmsg.DeleteACLs):   {0, 3},
}

// Supported returns the version range the broker supports for key.
func Supported(key int16) (VersionRange, bool) {
	vr, ok := supported[key]
	return vr, ok
}

// SupportedKeys returns the supported keys in ascending order.
func SupportedKeys() []int16 {
	keys := make([]int16, 0, len(supported))
	for k := range supported {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// interBroker are the controller → broker APIs and ControlledShutdown, with
// the versions Kafka 3.9's ZooKeeper-mode brokers accept. Requests of these
// keys are decoded always; a ZooKeeper-mode broker advertises them in
// ApiVersions (Kafka's ApiKeys for ListenerType.ZK_BROKER), a single node
// neither advertises nor answers them (it closes the connection, as for any
// key it does not know).
var interBroker = map[int16]VersionRange{
	int16(kmsg.LeaderAndISR):       {0, 7},
	int16(kmsg.StopReplica):        {0, 4},
	int16(kmsg.UpdateMetadata):     {0, 8},
	int16(kmsg.ControlledShutdown): {0, 3},
	// Leader → controller (Kafka's leaders; broker/api/alter_partition.go).
	int16(kmsg.AlterPartition): {0, 3},
	// Broker → controller at IBP 3.0-IV0 and later (KIP-730; Kafka's
	// brokers; broker/api/allocate_producer_ids.go).
	int16(kmsg.AllocateProducerIDs): {0, 0},
}

// InterBroker returns the version range of an inter-broker API key.
func InterBroker(key int16) (VersionRange, bool) {
	vr, ok := interBroker[key]
	return vr, ok
}

// InterBrokerKeys returns the inter-broker keys in ascending order.
func InterBrokerKeys() []int16 {
	keys := make([]int16, 0, len(interBroker))
	for k := range interBroker {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
