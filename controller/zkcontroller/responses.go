package zkcontroller

import (
	"log/slog"
	"strconv"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ResponseErrors lists the errors in a broker's answer to a controller
// request, keyed "" for the request as a whole and "topic-partition" (or
// "topicID-partition" for LeaderAndIsr v5+) for a partition's.
func ResponseErrors(resp kmsg.Response) map[string]error {
	out := map[string]error{}
	add := func(where string, code int16) {
		if err := kerr.ErrorForCode(code); err != nil {
			out[where] = err
		}
	}
	part := func(topic string, p int32) string { return topic + "-" + strconv.Itoa(int(p)) }
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		add("", r.ErrorCode)
		for _, p := range r.Partitions {
			add(part(p.Topic, p.Partition), p.ErrorCode)
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(part(zkdata.EncodeUUID(t.TopicID), p.Partition), p.ErrorCode)
			}
		}
	case *kmsg.UpdateMetadataResponse:
		add("", r.ErrorCode)
	case *kmsg.StopReplicaResponse:
		add("", r.ErrorCode)
		for _, p := range r.Partitions {
			add(part(p.Topic, p.Partition), p.ErrorCode)
		}
	}
	return out
}

// logResponses is the default channel's ResponseFunc: a broker refusing a
// controller request is worth a warning (a stale epoch means a newer
// controller or broker incarnation exists); Kafka's controller likewise
// only logs these.
func logResponses(log *slog.Logger) ResponseFunc {
	return func(broker int32, req kmsg.Request, resp kmsg.Response) {
		for where, err := range ResponseErrors(resp) {
			log.Warn("broker refused controller request", "broker", broker,
				"request", kmsg.NameForKey(req.Key()), "partition", where, "err", err)
		}
	}
}
