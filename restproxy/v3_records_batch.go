package restproxy

// v3 batch produce: POST /v3/clusters/{cluster_id}/topics/{topic_name}/records:batch
// with {"entries":[{"id":"1", ...a v3 record...}]}: every entry is produced
// (at once, not one after the other) and the answer, 207 Multi-Status,
// lists the successes and the failures by entry id, each in entry order,
// as Confluent's ProduceBatchAction.

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxBatchEntries is Confluent's produce.batch.maximum.entries default.
const maxBatchEntries = 10

// batchIDPattern is what an entry id must be: 1 to 80 of [0-9a-zA-Z-_].
var batchIDPattern = regexp.MustCompile(`^[0-9a-zA-Z_-]{1,80}$`)

type v3BatchEntry struct {
	ID json.RawMessage `json:"id"`
	v3ProduceRecord
}

type v3BatchSuccess struct {
	ID          string      `json:"id"`
	ClusterID   string      `json:"cluster_id"`
	TopicName   string      `json:"topic_name"`
	PartitionID int32       `json:"partition_id"`
	Offset      int64       `json:"offset"`
	Timestamp   string      `json:"timestamp"`
	Key         *v3DataInfo `json:"key,omitempty"`
	Value       *v3DataInfo `json:"value,omitempty"`
}

type v3BatchFailure struct {
	ID        string `json:"id"`
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message,omitempty"`
}

func (p *Proxy) routesV3RecordsBatch() {
	p.v3("POST /topics/{topic_name}/records:batch", func(v *v3Call) error {
		if mt := v.mediaType(); mt != "application/json" && mt != "" {
			return errUnsupportedMedia
		}
		var req struct {
			Entries []v3BatchEntry `json:"entries"`
		}
		if err := v.decode(&req, true); err != nil {
			return err
		}
		bad := func(msg string) error { return errf(http.StatusBadRequest, codeBadRequest, "%s", msg) }
		switch {
		case len(req.Entries) == 0:
			return bad("Batch must not be empty.")
		case len(req.Entries) > maxBatchEntries:
			return bad("Batch has too many entries (at most 10).")
		}
		ids := make([]string, len(req.Entries))
		seen := map[string]bool{}
		for i, e := range req.Entries {
			var id string
			if err := json.Unmarshal(e.ID, &id); err != nil || !batchIDPattern.MatchString(id) {
				return errf(http.StatusUnprocessableEntity, http.StatusUnprocessableEntity, "Batch entry identifier not a valid string.")
			}
			if seen[id] {
				return bad("Batch entry identifiers must be distinct.")
			}
			seen[id], ids[i] = true, id
		}
		topic := v.r.PathValue("topic_name")
		uc, pl, err := v.topicPlacer(topic)
		if err != nil {
			return err
		}

		type outcome struct {
			ok   *v3BatchSuccess
			fail *v3BatchFailure
		}
		out := make([]outcome, len(req.Entries))
		failed := func(i int, err error) {
			re := kafkaError(err)
			out[i].fail = &v3BatchFailure{ID: ids[i], ErrorCode: re.status, Message: re.msg}
		}
		var wg sync.WaitGroup
		for i, e := range req.Entries {
			r, ki, vi, err := v.v3Record(topic, e.v3ProduceRecord)
			if err == nil {
				err = pl.place(r)
			}
			if err != nil {
				failed(i, err)
				continue
			}
			wg.Add(1)
			uc.cl.Produce(v.ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					failed(i, err)
					return
				}
				out[i].ok = &v3BatchSuccess{ID: ids[i], ClusterID: v.md.Cluster, TopicName: r.Topic, PartitionID: r.Partition,
					Offset: r.Offset, Timestamp: r.Timestamp.UTC().Format(v3TimeFormat), Key: ki, Value: vi}
			})
		}
		wg.Wait()
		resp := struct {
			Successes []v3BatchSuccess `json:"successes"`
			Failures  []v3BatchFailure `json:"failures"`
		}{[]v3BatchSuccess{}, []v3BatchFailure{}}
		for _, o := range out {
			if o.ok != nil {
				resp.Successes = append(resp.Successes, *o.ok)
			} else {
				resp.Failures = append(resp.Failures, *o.fail)
			}
		}
		return v.reply(http.StatusMultiStatus, resp)
	})
}
