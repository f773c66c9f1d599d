package schemaregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The records of the _schemas topic, in Confluent Schema Registry's JSON
// (io.confluent.kafka.schemaregistry.storage.*Key and *Value), so that a
// Confluent registry can read a topic kbroker wrote and the reverse.
//
// Keys: {"keytype":"SCHEMA","subject":"s","version":1,"magic":1},
// {"keytype":"CONFIG","subject":"s","magic":0} (no subject: the global
// config), {"keytype":"MODE",...}, {"keytype":"DELETE_SUBJECT",...},
// {"keytype":"CLEAR_SUBJECT",...}, {"keytype":"NOOP","magic":0}. A null
// value is a tombstone: a permanently deleted version, a deleted config or
// mode.

// Key types of _schemas records.
const (
	keySchema       = "SCHEMA"
	keyConfig       = "CONFIG"
	keyMode         = "MODE"
	keyDeleteSubj   = "DELETE_SUBJECT"
	keyClearSubject = "CLEAR_SUBJECT"
	keyNoop         = "NOOP"
)

// recordKey is a _schemas key; fields in Confluent's order (keytype,
// subject, version, magic). Subject nil is the global config or mode.
type recordKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject,omitempty"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
}

func schemaKey(subject string, version int) recordKey {
	return recordKey{KeyType: keySchema, Subject: &subject, Version: version, Magic: 1}
}

// subjectKey is a CONFIG, MODE, DELETE_SUBJECT or CLEAR_SUBJECT key;
// subject "" is the global config or mode.
func subjectKey(keyType, subject string) recordKey {
	k := recordKey{KeyType: keyType}
	if subject != "" {
		k.Subject = &subject
	}
	return k
}

func (k recordKey) subject() string {
	if k.Subject == nil {
		return ""
	}
	return *k.Subject
}

// Reference is a schema reference: a name the schema uses (an Avro full
// name, a Protobuf import path, a JSON Schema $ref URL) resolved to a
// subject's version.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaValue is a SCHEMA record's value (SchemaValue). schemaType is
// left out for AVRO, as Confluent's older registries write it; a missing
// one reads as AVRO. metadata and ruleSet are kept as they were written
// by a Confluent registry, not interpreted.
type schemaValue struct {
	Subject    string          `json:"subject"`
	Version    int             `json:"version"`
	ID         int             `json:"id"`
	SchemaType string          `json:"schemaType,omitempty"`
	References []Reference     `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	Schema     string          `json:"schema"`
	Deleted    bool            `json:"deleted"`
}

// configValue is a CONFIG record's value (ConfigValue): the
// compatibility level and normalize flag of a subject or, without a
// subject, the global default.
type configValue struct {
	Subject            string `json:"subject,omitempty"`
	Normalize          *bool  `json:"normalize,omitempty"`
	CompatibilityLevel string `json:"compatibilityLevel,omitempty"`
}

// modeValue is a MODE record's value (ModeValue).
type modeValue struct {
	Subject string `json:"subject,omitempty"`
	Mode    string `json:"mode"`
}

// deleteSubjectValue soft-deletes every version of Subject up to Version.
type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// clearSubjectValue drops the soft-deleted versions of Subject from
// memory (written when a subject goes to IMPORT mode).
type clearSubjectValue struct {
	Subject string `json:"subject"`
}

// record is one decoded _schemas record; exactly one value field is set
// unless it is a tombstone or a NOOP.
type record struct {
	key     recordKey
	schema  *schemaValue
	config  *configValue
	mode    *modeValue
	delete  *deleteSubjectValue
	clear   *clearSubjectValue
	unknown bool // a key type this registry does not use (CONTEXT, ASSOC, ...)
}

// decodeRecord parses a _schemas record. An error means the record is not
// Confluent's JSON; the caller logs and skips it.
func decodeRecord(key, value []byte) (record, error) {
	var r record
	dec := json.NewDecoder(bytes.NewReader(key))
	if err := dec.Decode(&r.key); err != nil {
		return r, fmt.Errorf("key %q: %w", truncate(key), err)
	}
	switch r.key.KeyType {
	case keySchema:
		if r.key.Subject == nil || r.key.Version <= 0 {
			return r, fmt.Errorf("key %q: a SCHEMA key needs a subject and a version", truncate(key))
		}
		if r.key.Magic != 1 {
			return r, fmt.Errorf("key %q: SCHEMA key magic %d, want 1", truncate(key), r.key.Magic)
		}
	case keyConfig, keyMode, keyNoop:
	case keyDeleteSubj, keyClearSubject:
		if r.key.Subject == nil {
			return r, fmt.Errorf("key %q: no subject", truncate(key))
		}
	default:
		r.unknown = true
		return r, nil
	}
	if value == nil || r.key.KeyType == keyNoop {
		return r, nil
	}
	var err error
	switch r.key.KeyType {
	case keySchema:
		r.schema = new(schemaValue)
		err = json.Unmarshal(value, r.schema)
		if err == nil && (r.schema.ID <= 0 || r.schema.Schema == "") {
			err = fmt.Errorf("no id or no schema")
		}
		if err == nil && (r.schema.Subject != *r.key.Subject || r.schema.Version != r.key.Version) {
			err = fmt.Errorf("subject %q version %d differ from the key's", r.schema.Subject, r.schema.Version)
		}
		if err == nil && r.schema.SchemaType == "" {
			r.schema.SchemaType = typeAvro
		}
	case keyConfig:
		r.config = new(configValue)
		err = json.Unmarshal(value, r.config)
	case keyMode:
		r.mode = new(modeValue)
		err = json.Unmarshal(value, r.mode)
	case keyDeleteSubj:
		r.delete = new(deleteSubjectValue)
		err = json.Unmarshal(value, r.delete)
	case keyClearSubject:
		r.clear = new(clearSubjectValue)
		err = json.Unmarshal(value, r.clear)
	}
	if err != nil {
		return r, fmt.Errorf("%s value %q: %w", r.key.KeyType, truncate(value), err)
	}
	return r, nil
}

// encodeKey and encodeValue write Confluent's JSON.
func encodeKey(k recordKey) []byte {
	b, _ := json.Marshal(k) // strings and ints: cannot fail
	return b
}

func encodeValue(v any) []byte {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v) // plain structs: cannot fail
	return b
}

// encodeSchemaValue writes AVRO without schemaType, as Confluent does.
func encodeSchemaValue(v schemaValue) []byte {
	if v.SchemaType == typeAvro {
		v.SchemaType = ""
	}
	return encodeValue(v)
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
