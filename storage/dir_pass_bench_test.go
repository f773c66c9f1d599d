package storage

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// BenchmarkDirFlusherPass measures the flush bookkeeping of one pass of a
// dir's background goroutine (its sleep computation and flushStale) with
// 10,000 logs that each got a record and have no log.flush.interval.ms
// (Kafka's default). Issue 26: every pass walked every log twice (a copy of
// the dir's map and each log's Config), a third of the brokers' CPU at
// 10,000 partitions.
func BenchmarkDirFlusherPass(b *testing.B) {
	d, err := OpenDirConfig("/data", DirConfig{FS: vfs.NewMem(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	rec := batchOf(1, 1, 10)
	for i := range 10000 {
		l, err := d.Create(TopicPartition{"pass", int32(i)}, Config{})
		if err != nil {
			b.Fatal(err)
		}
		mustAppend(b, l, 0, append([]byte(nil), rec...))
	}
	far := time.Now().Add(time.Hour)
	b.ResetTimer()
	for range b.N {
		d.sleep(far)
		d.flushStale()
	}
}
