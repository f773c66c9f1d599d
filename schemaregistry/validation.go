package schemaregistry

// CheckSchemaID serves the broker's produce-side schema validation
// (Confluent Server's confluent.{key,value}.schema.validation): is a
// record's schema id registered under the subject its strategy names?

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kbroker/kbroker/schemaregistry/codec"
)

// Subject name strategies, by the class names of Confluent's serializers.
const (
	strategyTopicName       = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	strategyRecordName      = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	strategyTopicRecordName = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
)

// catchUpTimeout bounds how long a miss waits for the registry's view to
// reach the end of _schemas (a schema registered through another broker
// a moment ago).
const catchUpTimeout = 2 * time.Second

// CheckSchemaID returns nil when schema id is registered (not deleted)
// under the subject that strategy names for topic's key (isKey) or value:
// "<topic>-key"/"<topic>-value" (TopicNameStrategy), the schema's record
// name (RecordNameStrategy: Avro's full name, Protobuf's first message,
// a JSON Schema's title) or "<topic>-<record name>"
// (TopicRecordNameStrategy). A miss is checked again once the view has
// caught up with the end of _schemas, within ctx and catchUpTimeout.
func (r *Registry) CheckSchemaID(ctx context.Context, topic string, isKey bool, strategy string, id int) error {
	if err := r.waitReady(ctx); err != nil {
		return fmt.Errorf("the Schema Registry is not ready: %w", err)
	}
	err := r.checkID(topic, isKey, strategy, id)
	if err == nil || errors.Is(err, errBadStrategy) {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	if cerr := r.catchUp(cctx); cerr != nil {
		return err
	}
	return r.checkID(topic, isKey, strategy, id)
}

var errBadStrategy = errors.New("unknown subject name strategy")

func (r *Registry) checkID(topic string, isKey bool, strategy string, id int) error {
	r.mu.RLock()
	v := r.mu.st.schemaByID(id)
	r.mu.RUnlock()
	if v == nil {
		return fmt.Errorf("schema id %d is not registered", id)
	}
	side := "value"
	if isKey {
		side = "key"
	}
	var subject string
	switch strategy {
	case "", strategyTopicName:
		subject = topic + "-" + side
	case strategyRecordName, strategyTopicRecordName:
		name, err := r.recordName(v)
		if err != nil {
			return err
		}
		subject = name
		if strategy == strategyTopicRecordName {
			subject = topic + "-" + name
		}
	default:
		return fmt.Errorf("%w %q", errBadStrategy, strategy)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, ver := range r.mu.st.subjects[subject] {
		if ver.ID == id && !ver.Deleted {
			return nil
		}
	}
	return fmt.Errorf("schema id %d is not registered under subject %s", id, subject)
}

// recordName is the record name of the schema v, cached by id (an id
// names one schema for ever).
func (r *Registry) recordName(v *schemaValue) (string, error) {
	if n, ok := r.names.Load(v.ID); ok {
		return n.(string), nil
	}
	r.mu.RLock()
	_, refs, err := r.mu.st.resolveRefs(v.References)
	r.mu.RUnlock()
	if err != nil {
		return "", err
	}
	name, err := codec.RecordName(v.SchemaType, v.Schema, codecRefs(refs))
	if err != nil {
		return "", fmt.Errorf("schema id %d: %w", v.ID, err)
	}
	r.names.Store(v.ID, name)
	return name, nil
}

// catchUp waits until the view holds every record of _schemas written
// before now.
func (r *Registry) catchUp(ctx context.Context) error {
	r.mu.RLock()
	adm := r.mu.adm
	r.mu.RUnlock()
	if adm == nil {
		return errNotReady
	}
	end, err := endOffset(ctx, adm, r.cfg.Topic)
	if err != nil {
		return err
	}
	return r.waitApplied(ctx, end)
}
