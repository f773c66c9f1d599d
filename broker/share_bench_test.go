package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkShareConsumeAccept: a franz-go share consumer receives b.N
// records of a 3-partition topic and accepts each one (acknowledgements
// ride on its next ShareFetch or a ShareAcknowledge), on one in-process
// broker: the cost of acquiring, acknowledging and, since share state is
// persisted, writing each acknowledgement's share-partition snapshot to
// __share_group_state.
func BenchmarkShareConsumeAccept(b *testing.B) {
	br := startTestBroker(b, b.TempDir(), map[string]string{"num.partitions": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs()[0].String()), kgo.DefaultProduceTopic("sh-bench"), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	group := fmt.Sprintf("sg-bench-%d", b.N)
	recs := make([]*kgo.Record, b.N)
	for i := range recs {
		recs[i] = kgo.StringRecord(fmt.Sprint(i))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	shareEarliest(ctx, b, cl, group)
	cons, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs()[0].String()), kgo.ShareGroup(group), kgo.ConsumeTopics("sh-bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	b.ResetTimer()
	seen := 0
	for seen < b.N {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("consumed %d of %d", seen, b.N)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			r.Ack(kgo.AckAccept)
		})
	}
	if err := cons.FlushAcks(ctx); err != nil {
		b.Fatal(err)
	}
}
