package integration

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/integration/history"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RunGroupMember is one consumer group member's life, reported to gc: a
// franz-go client named name in group, subscribed to topic, reading from
// the start, that polls, commits what it polled after every poll and
// when its partitions are revoked (Close revokes them), and leaves after
// lifetime or when stop closes. opts are added to the client's (a KIP-848
// member: kgo.ServerSideBalancer()).
func RunGroupMember(seeds []string, group, topic, name string, lifetime time.Duration, gc *history.GroupChecker, stop <-chan struct{}, opts ...kgo.Opt) error {
	opts = append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10 * time.Second), kgo.MetadataMinAge(100 * time.Millisecond), kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			gc.Assigned(name, tpsOf(m)...)
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, m map[string][]int32) {
			commitPolled(ctx, c, name, gc)
			gc.Revoked(name, tpsOf(m)...)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			gc.Revoked(name, tpsOf(m)...)
		})}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close() // commits nothing more: Close runs the revoke callback, which commits
	end := time.After(lifetime)
	for {
		select {
		case <-stop:
			return nil
		case <-end:
			return nil
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			gc.Polled(name, history.Record{TP: history.TP{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset, Value: string(r.Value)})
		})
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		commitPolled(ctx, cl, name, gc)
		cancel()
	}
}

// commitPolled commits cl's uncommitted offsets and reports the
// partitions whose commit succeeded.
func commitPolled(ctx context.Context, cl *kgo.Client, name string, gc *history.GroupChecker) {
	offs := cl.UncommittedOffsets()
	if len(offs) == 0 {
		return
	}
	sent := gc.CommitSent()
	ok := map[history.TP]int64{}
	cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			return
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode == 0 {
					ok[history.TP{Topic: rt.Topic, Partition: rp.Partition}] = offs[rt.Topic][rp.Partition].Offset
				}
			}
		}
	})
	gc.Committed(name, sent, ok)
}

// tpsOf lists the partitions of m.
func tpsOf(m map[string][]int32) []history.TP {
	var out []history.TP
	for topic, ps := range m {
		for _, p := range ps {
			out = append(out, history.TP{Topic: topic, Partition: p})
		}
	}
	return out
}
