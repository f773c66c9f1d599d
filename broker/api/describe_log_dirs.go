package api

// DescribeLogDirs v0–v4 (KIP-113): every log dir of this broker with the
// size of each partition in it. v1 changed only throttling; v2 is flexible;
// v3 adds a top-level ErrorCode; v4 adds TotalBytes and UsableBytes of the
// dir's volume (statfs). Null Topics means every partition; requested
// partitions this broker does not have are left out, as Kafka does.
// OffsetLag is always 0 (the high watermark follows the log end on a single
// node) and there are no future replicas. A dir taken offline by a failed
// write or fsync is reported with KAFKA_STORAGE_ERROR and no partitions.

import (
	"path/filepath"
	"sort"
	"syscall"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDescribeLogDirs(_ *network.RequestContext, req *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	want := func(storage.TopicPartition) bool { return true }
	if req.Topics != nil {
		set := map[storage.TopicPartition]bool{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				set[storage.TopicPartition{Topic: rt.Topic, Partition: p}] = true
			}
		}
		want = func(tp storage.TopicPartition) bool { return set[tp] }
	}
	served := map[storage.TopicPartition]*replica.Partition{}
	for _, p := range b.rm.AllPartitions() {
		served[storage.TopicPartition{Topic: p.Topic.Meta.Name, Partition: p.Index}] = p
	}
	for _, d := range b.rm.Dirs() {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = d.Path()
		if abs, err := filepath.Abs(rd.Dir); err == nil {
			rd.Dir = abs
		}
		if d.Offline() != nil {
			// As Kafka: an offline dir is listed with KAFKA_STORAGE_ERROR
			// and no partitions or sizes (-1).
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		var fs syscall.Statfs_t
		if err := syscall.Statfs(d.Path(), &fs); err == nil {
			rd.TotalBytes = int64(fs.Blocks) * int64(fs.Bsize)
			rd.UsableBytes = int64(fs.Bavail) * int64(fs.Bsize)
		}
		byTopic := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		for tp, l := range d.Logs() {
			p := served[tp]
			if p == nil || !want(tp) {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = tp.Partition
			rp.Size = l.Size()
			rp.OffsetLag = max(p.HighWatermark()-l.LogEndOffset(), 0)
			byTopic[tp.Topic] = append(byTopic[tp.Topic], rp)
		}
		names := make([]string, 0, len(byTopic))
		for n := range byTopic {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = n
			rt.Partitions = byTopic[n]
			sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].Partition < rt.Partitions[j].Partition })
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp
}
