package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLogAppendTimeTopic: on a message.timestamp.type=LogAppendTime topic
// the broker's time replaces the producer's in the stored batch, in what a
// consumer reads and in the log's time lookup (ListOffsets by timestamp), so
// the header the produce path hands the log is the stamped one.
func TestLogAppendTimeTopic(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("lat"))
	adm := kadm.NewClient(cl)
	lat := "LogAppendTime"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": &lat}, "lat"); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	old := time.UnixMilli(1_000)
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}, Timestamp: old}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	offs, err := adm.ListOffsetsAfterMilli(ctx, before, "lat")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("lat", 0); !ok || o.Err != nil || o.Offset != 0 {
		t.Fatalf("first offset at or after %d: %+v (found %v), want 0: the log indexed the producer's time", before, o, ok)
	}
	cons := newClient(t, b, kgo.ConsumeTopics("lat"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for n := 0; n < 3; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 3: %v", n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if r.Attrs.TimestampType() != 1 || r.Timestamp.UnixMilli() < before {
				t.Fatalf("record %d: timestamp %v type %d, want the broker's time (>= %d) as LogAppendTime", r.Offset, r.Timestamp, r.Attrs.TimestampType(), before)
			}
		})
	}
}
