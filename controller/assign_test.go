package controller

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func brokersNoRack(ids ...int32) []BrokerMetadata {
	out := make([]BrokerMetadata, len(ids))
	for i, id := range ids {
		out[i] = BrokerMetadata{ID: id}
	}
	return out
}

// seq is a Rand returning fixed numbers in order.
type seq []int

func (s *seq) Intn(n int) int {
	v := (*s)[0] % n
	*s = (*s)[1:]
	return v
}

// Kafka's AdminTest.testReplicaAssignment: 5 brokers, 10 partitions, RF 3,
// fixed start index 0.
func TestAssignRackUnawareKafkaOutput(t *testing.T) {
	got, err := AssignReplicasFrom(brokersNoRack(0, 1, 2, 3, 4), 10, 3, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]int32{
		0: {0, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 4}, 3: {3, 4, 0}, 4: {4, 0, 1},
		5: {0, 2, 3}, 6: {1, 3, 4}, 7: {2, 4, 0}, 8: {3, 0, 1}, 9: {4, 1, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// With a random start the first draw is the start index and the second the
// replica shift, as in Kafka; brokers are sorted by id first.
func TestAssignRandomStart(t *testing.T) {
	r := seq{2, 1}
	got, err := AssignReplicas(brokersNoRack(3, 1, 2), 3, 2, &r)
	if err != nil {
		t.Fatal(err)
	}
	// ids [1,2,3]; start 2, shift 1: p0 first=2 → 3, then (2+1+(1%2))%3=1 → 2.
	want := map[int32][]int32{0: {3, 2}, 1: {1, 3}, 2: {2, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

// Kafka's AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers.
func TestAssignRackAwareKafkaOutput(t *testing.T) {
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	if got := RackAlternatedBrokers(racks); !reflect.DeepEqual(got, []int32{0, 3, 1, 5, 4, 2}) {
		t.Fatalf("alternated %v", got)
	}
	five := map[int32]string{}
	for k, v := range racks {
		if k != 5 {
			five[k] = v
		}
	}
	if got := RackAlternatedBrokers(five); !reflect.DeepEqual(got, []int32{0, 3, 1, 4, 2}) {
		t.Fatalf("alternated without 5: %v", got)
	}
	var bs []BrokerMetadata
	for id, rack := range racks {
		bs = append(bs, BrokerMetadata{ID: id, Rack: rack})
	}
	got, err := AssignReplicasFrom(bs, 7, 3, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]int32{0: {0, 3, 1}, 1: {3, 1, 5}, 2: {1, 5, 4}, 3: {5, 4, 2}, 4: {4, 2, 0}, 5: {2, 0, 3}, 6: {0, 4, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// Kafka's testAssignmentWithRackAware: every partition spans 3 racks, and
// leaders and replicas are spread evenly.
func TestAssignRackAwareEven(t *testing.T) {
	racks := map[int32]string{0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
	var bs []BrokerMetadata
	for id, rack := range racks {
		bs = append(bs, BrokerMetadata{ID: id, Rack: rack})
	}
	for _, start := range []int{0, 1, 2, 3, 4, 5} {
		got, err := AssignReplicasFrom(bs, 6, 3, start, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		leaders, replicas := map[int32]int{}, map[int32]int{}
		for _, rs := range got {
			seen := map[string]bool{}
			for _, b := range rs {
				seen[racks[b]] = true
				replicas[b]++
			}
			if len(seen) != 3 {
				t.Fatalf("start %d: replicas %v span racks %v", start, rs, seen)
			}
			leaders[rs[0]]++
		}
		for id := range racks {
			if leaders[id] != 1 || replicas[id] != 3 {
				t.Fatalf("start %d: broker %d leads %d, holds %d", start, id, leaders[id], replicas[id])
			}
		}
	}
}

func TestAssignErrors(t *testing.T) {
	for _, tc := range []struct {
		bs   []BrokerMetadata
		n    int32
		rf   int16
		want error
	}{
		{brokersNoRack(0, 1), 0, 1, kerr.InvalidPartitions},
		{brokersNoRack(0, 1), 1, 0, kerr.InvalidReplicationFactor},
		{brokersNoRack(0, 1), 1, 3, kerr.InvalidReplicationFactor},
		{[]BrokerMetadata{{ID: 0, Rack: "a"}, {ID: 1}}, 1, 1, kerr.InvalidReplicaAssignment},
	} {
		if _, err := AssignReplicasFrom(tc.bs, tc.n, tc.rf, 0, 0, nil); !errors.Is(err, tc.want) {
			t.Errorf("%v n=%d rf=%d: %v, want %v", tc.bs, tc.n, tc.rf, err, tc.want)
		}
	}
	// RF 1 on one broker never divides by n-1 = 0.
	got, err := AssignReplicasFrom(brokersNoRack(7), 3, 1, 0, 0, nil)
	if err != nil || !reflect.DeepEqual(got, map[int32][]int32{0: {7}, 1: {7}, 2: {7}}) {
		t.Fatalf("%v %v", got, err)
	}
}

// Adding partitions continues the pattern: partitions 5..9 of a topic
// assigned from partition 5 on are those of a 10-partition assignment.
func TestAssignFromStartPartition(t *testing.T) {
	all, _ := AssignReplicasFrom(brokersNoRack(0, 1, 2, 3, 4), 10, 3, 0, 0, nil)
	more, _ := AssignReplicasFrom(brokersNoRack(0, 1, 2, 3, 4), 5, 3, 0, 5, nil)
	for p := int32(5); p < 10; p++ {
		if !reflect.DeepEqual(all[p], more[p]) {
			t.Fatalf("partition %d: %v vs %v", p, more[p], all[p])
		}
	}
}
