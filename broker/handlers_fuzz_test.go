package broker

import (
	"testing"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzedKeys are the APIs FuzzHandlers drives: those answered at once (the
// group and transaction APIs wait on rebalances and are driven by their
// state-machine tests instead).
var fuzzedKeys = []kmsg.Key{
	kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.ApiVersions,
	kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.DescribeConfigs, kmsg.AlterConfigs,
	kmsg.IncrementalAlterConfigs, kmsg.CreatePartitions, kmsg.DeleteRecords,
	kmsg.DescribeLogDirs, kmsg.OffsetForLeaderEpoch, kmsg.DescribeProducers,
	kmsg.DescribeCluster, kmsg.DescribeTopicPartitions, kmsg.ElectLeaders,
}

// FuzzHandlers decodes arbitrary request bytes as the connection does and
// hands whatever decodes to the handlers of a real broker: no input may
// panic, and every answer must encode.
func FuzzHandlers(f *testing.F) {
	for _, k := range fuzzedKeys {
		req := kmsg.RequestForKey(int16(k))
		vr, _ := protocol.Supported(int16(k))
		for v := vr.Min; v <= vr.Max; v++ {
			req.SetVersion(v)
			f.Add(int16(k), v, req.AppendTo(nil))
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	name := "fuzz"
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
	f.Add(int16(kmsg.Metadata), int16(12), meta.AppendTo(nil))

	b := startTestBroker(f, f.TempDir(), map[string]string{"num.partitions": "2"})
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		allowed := false
		for _, k := range fuzzedKeys {
			allowed = allowed || int16(k) == key
		}
		vr, ok := protocol.Supported(key)
		if !allowed || !ok || version < vr.Min || version > vr.Max {
			return
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.ReadFrom(body) != nil {
			return
		}
		switch r := req.(type) {
		case *kmsg.FetchRequest:
			r.MaxWaitMillis = 0 // no long polls in a fuzzer
		case *kmsg.CreateTopicsRequest:
			for _, t := range r.Topics {
				if t.NumPartitions > 64 || len(t.ReplicaAssignment) > 64 {
					return // legal, but creating thousands of logs only slows the fuzzer
				}
			}
		case *kmsg.CreatePartitionsRequest:
			for _, t := range r.Topics {
				if t.Count > 64 {
					return
				}
			}
		}
		pr := protocol.Request{Header: protocol.RequestHeader{APIKey: key, APIVersion: version}, Body: req}
		if resp := b.api.Handle(&network.RequestContext{Header: pr.Header, Principal: network.AnonymousPrincipal, RemoteAddr: "fuzz:0"}, pr); resp != nil {
			_ = protocol.AppendResponse(nil, 1, resp)
		}
	})
}
