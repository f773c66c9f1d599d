package compat

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareAcksSurviveKill: a franz-go share consumer accepts about half
// of a topic's records (each poll's records acknowledged and flushed, the
// broker's answer confirming them); the broker is killed with SIGKILL and
// restarted on the same log dir; a new share consumer of the group then
// receives every record not confirmed before the kill and none that was,
// because the share-partition state is in __share_group_state.
func TestShareAcksSurviveKill(t *testing.T) {
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	adm := newAdmin(t, b.Addr())
	const topic, group, n = "sk", "sk-share", 300
	createTopic(t, adm, topic, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	prod := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(topic))
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	if aresp, err := alter.RequestWith(ctx, prod); err != nil || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset=earliest: %v %+v", err, aresp)
	}
	produceSync(t, prod, keyedRecords(topic, 0, n))

	var mu sync.Mutex
	var ackErrs []error
	onAck := kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			if r.Err != nil {
				ackErrs = append(ackErrs, r.Err)
			}
		}
	})
	confirmed := map[string]bool{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(20), onAck)
	if err != nil {
		t.Fatal(err)
	}
	for len(confirmed) < n/2 {
		fs := cl.PollRecords(ctx, 20)
		if ctx.Err() != nil {
			t.Fatalf("confirmed %d of %d before the kill", len(confirmed), n/2)
		}
		rs := fs.Records()
		for _, r := range rs {
			r.Ack(kgo.AckAccept)
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		errs := ackErrs
		mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("acknowledgements failed: %v", errs)
		}
		for _, r := range rs {
			confirmed[string(r.Key)] = true
		}
	}
	b.Kill() // the client may hold records it fetched but did not acknowledge
	cl.Close()
	b.Restart()

	after := newKgo(t, b.Addr(), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	got := map[string]bool{}
	for len(got) < n-len(confirmed) {
		fs := after.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after the restart received %d of the %d unconfirmed records", len(got), n-len(confirmed))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if confirmed[string(r.Key)] {
				t.Errorf("record %s was acknowledged before the kill and delivered again (delivery count %d)", r.Key, r.DeliveryCount())
			}
			got[string(r.Key)] = true
			r.Ack(kgo.AckAccept)
		})
	}
	if err := after.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
}
