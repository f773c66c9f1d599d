package controller

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// BrokerMetadata is what replica assignment needs to know of a live broker.
type BrokerMetadata struct {
	ID int32
	// Rack is broker.rack; empty when the broker has none.
	Rack string
}

// Rand is the random source of replica assignment. *math/rand.Rand
// satisfies it; tests inject a fixed one so assignments are deterministic.
type Rand interface {
	// Intn returns a number in [0, n).
	Intn(n int) int
}

// AssignReplicas spreads nPartitions partitions of replicationFactor
// replicas over brokers exactly as Kafka's AdminUtils.assignReplicasToBrokers
// does with a random start: the first replica of partition p goes to broker
// (start+p) mod n; the others follow at a shift that grows by one every n
// partitions, so leaders and followers are both spread evenly. With racks on
// every broker the list is first arranged to alternate racks and each
// partition gets replicas in as many racks as possible. Brokers are taken in
// ascending id order, as Kafka's callers sort them.
//
// Errors wrap kerr.InvalidPartitions, kerr.InvalidReplicationFactor or
// kerr.InvalidReplicaAssignment (some brokers have a rack and some do not),
// the codes CreateTopics answers with.
func AssignReplicas(brokers []BrokerMetadata, nPartitions int32, replicationFactor int16, r Rand) (map[int32][]int32, error) {
	return assignReplicas(brokers, nPartitions, replicationFactor, -1, 0, r)
}

// AssignReplicasFrom is AssignReplicas for partitions numbered from
// startPartition on (CreatePartitions adding to an existing topic), with a
// fixed start index when fixedStart ≥ 0 (Kafka's fixedStartIndex; its tests
// use it).
func AssignReplicasFrom(brokers []BrokerMetadata, nPartitions int32, replicationFactor int16, fixedStart int, startPartition int32, r Rand) (map[int32][]int32, error) {
	return assignReplicas(brokers, nPartitions, replicationFactor, fixedStart, startPartition, r)
}

func assignReplicas(brokers []BrokerMetadata, nPartitions int32, rf int16, fixedStart int, startPartition int32, r Rand) (map[int32][]int32, error) {
	if nPartitions <= 0 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0", kerr.InvalidPartitions)
	}
	if rf <= 0 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0", kerr.InvalidReplicationFactor)
	}
	if int(rf) > len(brokers) {
		return nil, fmt.Errorf("%w: replication factor: %d larger than available brokers: %d", kerr.InvalidReplicationFactor, rf, len(brokers))
	}
	sorted := append([]BrokerMetadata(nil), brokers...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	racks := 0
	for _, b := range sorted {
		if b.Rack != "" {
			racks++
		}
	}
	start := func(n int) int {
		if fixedStart >= 0 {
			return fixedStart
		}
		return r.Intn(n)
	}
	if racks == 0 {
		ids := make([]int32, len(sorted))
		for i, b := range sorted {
			ids[i] = b.ID
		}
		return assignRackUnaware(ids, int(nPartitions), int(rf), start, int(startPartition)), nil
	}
	if racks != len(sorted) {
		return nil, fmt.Errorf("%w: not all brokers have rack information for replica rack aware assignment", kerr.InvalidReplicaAssignment)
	}
	return assignRackAware(sorted, int(nPartitions), int(rf), start, int(startPartition)), nil
}

func assignRackUnaware(ids []int32, nPartitions, rf int, start func(int) int, startPartition int) map[int32][]int32 {
	n := len(ids)
	out := make(map[int32][]int32, nPartitions)
	startIndex := start(n)
	shift := start(n) // Kafka draws the start index first, then the shift.
	p := max(0, startPartition)
	for range nPartitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + startIndex) % n
		replicas := []int32{ids[first]}
		for j := 0; j < rf-1; j++ {
			replicas = append(replicas, ids[replicaIndex(first, shift, j, n)])
		}
		out[int32(p)] = replicas
		p++
	}
	return out
}

func assignRackAware(brokers []BrokerMetadata, nPartitions, rf int, start func(int) int, startPartition int) map[int32][]int32 {
	rackOf := make(map[int32]string, len(brokers))
	rackSet := map[string]bool{}
	for _, b := range brokers {
		rackOf[b.ID] = b.Rack
		rackSet[b.Rack] = true
	}
	numRacks := len(rackSet)
	arranged := RackAlternatedBrokers(rackOf)
	n := len(arranged)
	out := make(map[int32][]int32, nPartitions)
	startIndex := start(n)
	shift := start(n)
	p := max(0, startPartition)
	for range nPartitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + startIndex) % n
		leader := arranged[first]
		replicas := []int32{leader}
		racksWith := map[string]bool{rackOf[leader]: true}
		brokersWith := map[int32]bool{leader: true}
		k := 0
		for j := 0; j < rf-1; j++ {
			for {
				b := arranged[replicaIndex(first, shift*numRacks, k, n)]
				rack := rackOf[b]
				k++
				// Skip a broker whose rack already has a replica while some
				// rack has none, or that already has one while some broker
				// has none.
				if (!racksWith[rack] || len(racksWith) == numRacks) && (!brokersWith[b] || len(brokersWith) == n) {
					replicas = append(replicas, b)
					racksWith[rack] = true
					brokersWith[b] = true
					break
				}
			}
		}
		out[int32(p)] = replicas
		p++
	}
	return out
}

// replicaIndex is the position of the (j+2)-th replica: never the first
// replica's own position, since the shift is in [1, n-1].
func replicaIndex(first, secondShift, j, n int) int {
	shift := 1 + (secondShift+j)%(n-1)
	return (first + shift) % n
}

// RackAlternatedBrokers lists brokers taking one from each rack in turn
// (racks in name order, brokers of a rack in id order): racks a:{0,1,2},
// b:{3,4,5}, c:{6,7,8} give 0,3,6,1,4,7,2,5,8.
func RackAlternatedBrokers(rackOf map[int32]string) []int32 {
	byRack := map[string][]int32{}
	for id, rack := range rackOf {
		byRack[rack] = append(byRack[rack], id)
	}
	racks := make([]string, 0, len(byRack))
	for rack, ids := range byRack {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		racks = append(racks, rack)
	}
	sort.Strings(racks)
	out := make([]int32, 0, len(rackOf))
	next := make(map[string]int, len(racks))
	for i := 0; len(out) < len(rackOf); i = (i + 1) % len(racks) {
		rack := racks[i]
		if next[rack] < len(byRack[rack]) {
			out = append(out, byRack[rack][next[rack]])
			next[rack]++
		}
	}
	return out
}
