package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration/history"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sameSet reports whether a and b hold the same broker ids.
func sameSet(a, b []int32) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x int32) bool { return !slices.Contains(b, x) })
}

// TestPartitionReassignmentUnderLoad moves a partition's replicas with
// AlterPartitionReassignments while a continuous acks=all idempotent
// producer writes to it: three brokers, the partition on two of them
// (RF=2, min.insync.replicas=2), its leader replaced by the third broker.
// The controller adds the new replica, which catches up into the ISR;
// leadership moves to it; the old leader's replica is removed and its log
// deleted. ListPartitionReassignments shows the move until it is done, a
// broker that is not the controller refuses both APIs with
// NOT_CONTROLLER, and every acknowledged record is read back exactly once
// and in order (history checker).
func TestPartitionReassignmentUnderLoad(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2"})
	ctrl := waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "moving", 1, 2, false)
	waitFullISR(t, bs, "moving", 2)
	ps, err := partitionsOf(bs[0].Addr(), "moving")
	if err != nil {
		t.Fatal(err)
	}
	leader := ps[0].Leader
	var other, third int32 = -1, -1
	for _, b := range bs {
		switch {
		case b.ID == leader:
		case slices.Contains(ps[0].Replicas, b.ID):
			other = b.ID
		default:
			third = b.ID
		}
	}
	target := []int32{third, other}
	t.Logf("moving/0: replicas %v, leader %d; reassigning to %v", ps[0].Replicas, leader, target)

	ch := history.New()
	p := startProducer(t, bs, "moving", ch)
	p.waitAcked(t, 2000, "records acknowledged before the reassignment")

	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "moving"
	ap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	ap.Partition, ap.Replicas = 0, target
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)
	list := kmsg.NewPtrListPartitionReassignmentsRequest()

	// Only the controller serves them.
	for _, b := range bs {
		if b.ID == ctrl {
			continue
		}
		r, err := send(b.Addr(), alter)
		if err != nil {
			t.Fatal(err)
		}
		if code := r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode; code != kerr.NotController.Code {
			t.Fatalf("AlterPartitionReassignments on broker %d (not the controller): error %d", b.ID, code)
		}
		r, err = send(b.Addr(), list)
		if err != nil {
			t.Fatal(err)
		}
		if code := r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode; code != kerr.NotController.Code {
			t.Fatalf("ListPartitionReassignments on broker %d (not the controller): error %d", b.ID, code)
		}
	}

	// Through a client, which sends admin requests to the controller.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(bs)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ar, err := alter.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartitionReassignments: %+v", ar)
	}
	// Until done, the controller lists the move: all four replica sets
	// of Kafka's listing (replicas = target ∪ original, adding, removing).
	sawMove := false
	waitFor(t, 90*time.Second, "the reassignment to finish", func() (bool, error) {
		lr, err := list.RequestWith(ctx, cl)
		if err != nil {
			return false, err
		}
		if lr.ErrorCode != 0 {
			return false, fmt.Errorf("ListPartitionReassignments: error %d", lr.ErrorCode)
		}
		if len(lr.Topics) == 0 {
			return true, nil
		}
		rp := lr.Topics[0].Partitions[0]
		if !sameSet(rp.Replicas, []int32{leader, other, third}) || !sameSet(rp.AddingReplicas, []int32{third}) || !sameSet(rp.RemovingReplicas, []int32{leader}) {
			t.Fatalf("listed reassignment %+v; want replicas %v adding [%d] removing [%d]", rp, []int32{leader, other, third}, third, leader)
		}
		sawMove = true
		return false, fmt.Errorf("in progress: %+v", rp)
	})
	t.Logf("reassignment listed while in progress: %v", sawMove)
	waitFor(t, 60*time.Second, "every cache to show the new replicas", func() (bool, error) {
		for _, b := range bs {
			ps, err := partitionsOf(b.Addr(), "moving")
			if err != nil {
				return false, err
			}
			p := ps[0]
			if !sameSet(p.Replicas, target) || !sameSet(p.ISR, target) || !slices.Contains(target, p.Leader) {
				return false, fmt.Errorf("broker %d: replicas %v isr %v leader %d", b.ID, p.Replicas, p.ISR, p.Leader)
			}
		}
		return true, nil
	})
	p.waitAcked(t, 2000, "records acknowledged after the reassignment")
	// The removed replica's log goes (StopReplica with delete).
	old := byID(bs, leader)
	waitFor(t, 60*time.Second, "the removed replica's log to be deleted", func() (bool, error) {
		_, err := os.Stat(filepath.Join(old.Props["log.dirs"], "moving-0"))
		return os.IsNotExist(err), fmt.Errorf("broker %d still has moving-0: %v", leader, err)
	})
	p.close(t)
	checkHistory(t, bs, "moving", ch, "after moving the partition's replicas")
}
