package api

// Broker-side schema validation (Confluent Server's
// confluent.{key,value}.schema.validation topic configs): a produced
// record whose key or value, on a side where it is on, is not null and
// does not start with magic byte 0 and the id of a schema registered
// under the subject its strategy names is refused, and with it the whole
// batch: INVALID_RECORD with one record error per bad record.

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SchemaChecker answers whether schema id is registered under the subject
// that strategy names for topic's key (isKey) or value; nil: it is. The
// broker's Schema Registry implements it.
type SchemaChecker interface {
	CheckSchemaID(ctx context.Context, topic string, isKey bool, strategy string, id int) error
}

// SetSchemaChecker sets the registry produce validation asks (nil: no
// registry on this broker, and a topic with validation on refuses every
// record).
func (b *API) SetSchemaChecker(c SchemaChecker) { b.schemas = c }

// maxRecordErrors bounds the record errors of one answer.
const maxRecordErrors = 100

// validateSchemas checks the records of batch for topic's settings and
// returns a message and the record errors when some record fails.
func (b *API) validateSchemas(ctx context.Context, topic string, set *replica.TopicSettings, batch []byte) (string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	_, recs, err := records.DecodeRecords(batch)
	if err != nil {
		return fmt.Sprintf("schema validation: decoding the batch: %v", err), nil
	}
	var errs []kmsg.ProduceResponseTopicPartitionErrorRecord
	// A batch asks the registry once per side and id.
	type sideID struct {
		key bool
		id  int
	}
	seen := map[sideID]string{}
	check := func(i int, side string, v replica.SchemaValidation, data []byte) {
		if !v.On || data == nil || len(errs) >= maxRecordErrors {
			return
		}
		msg := ""
		switch {
		case b.schemas == nil:
			msg = "this broker serves no Schema Registry (schema.registry.listeners)"
		case len(data) < 5 || data[0] != 0:
			msg = "it does not start with magic byte 0 and a schema id"
		default:
			k := sideID{side == "key", int(int32(binary.BigEndian.Uint32(data[1:5])))}
			m, ok := seen[k]
			if !ok {
				if err := b.schemas.CheckSchemaID(ctx, topic, k.key, v.Strategy, k.id); err != nil {
					m = err.Error()
				}
				seen[k] = m
			}
			msg = m
		}
		if msg != "" {
			e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			e.RelativeOffset = int32(i)
			m := fmt.Sprintf("Log record %d failed %s schema validation: %s", i, side, msg)
			e.ErrorMessage = &m
			errs = append(errs, e)
		}
	}
	for i, r := range recs {
		check(i, "key", set.KeySchema, r.Key)
		check(i, "value", set.ValueSchema, r.Value)
	}
	if len(errs) == 0 {
		return "", nil
	}
	return *errs[0].ErrorMessage, errs
}
