package schemaregistry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

type user struct {
	ID    int64   `avro:"id"`
	Email *string `avro:"email"`
}

// TestFranzGoSerdeEndToEnd: franz-go's pkg/sr client registers an Avro
// schema, its serde encodes records with the schema id, they go through
// the broker and decode again with the schema fetched by id; an
// incompatible schema and a soft delete go through the client too.
func TestFranzGoSerdeEndToEnd(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcl, err := sr.NewClient(sr.URLs(rb.url))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rcl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV2, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID != 1 || ss.Version != 1 || ss.Subject != "users-value" {
		t.Errorf("CreateSchema: %+v", ss)
	}

	// The producer side: the schema as registered.
	wschema := avro.MustParse(userV2)
	var serde sr.Serde
	serde.Register(ss.ID, user{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(wschema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(wschema, b, v) }))
	email := "ada@example.com"
	sent := []user{{ID: 1, Email: &email}, {ID: 2}}
	kcl := rb.kafkaClient(kgo.DefaultProduceTopic("users"), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("users"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for _, u := range sent {
		b, err := serde.Encode(u)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != 0 || int(b[1])<<24|int(b[2])<<16|int(b[3])<<8|int(b[4]) != ss.ID {
			t.Fatalf("encoded header % x, want magic 0 and id %d", b[:5], ss.ID)
		}
		if err := kcl.ProduceSync(ctx, &kgo.Record{Value: b}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// The consumer side knows only the registry: it reads the id from
	// each record and fetches that schema.
	var got []user
	for len(got) < len(sent) {
		fs := kcl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(got), len(sent), err)
		}
		for _, r := range fs.Records() {
			var dec sr.Serde
			id, _, err := dec.DecodeID(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			s, err := rcl.SchemaByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			rschema, err := avro.Parse(s.Schema)
			if err != nil {
				t.Fatalf("schema %d from the registry: %v", id, err)
			}
			dec.Register(id, user{}, sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(rschema, b, v) }))
			var u user
			if err := dec.Decode(r.Value, &u); err != nil {
				t.Fatal(err)
			}
			got = append(got, u)
		}
	}
	if got[0].ID != 1 || got[0].Email == nil || *got[0].Email != email || got[1].ID != 2 || got[1].Email != nil {
		t.Errorf("decoded %+v", got)
	}

	// Compatibility and deletes through the client.
	res, err := rcl.CheckCompatibility(ctx, "users-value", -1, sr.Schema{Schema: `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"string"}]}`})
	if err != nil || res.Is {
		t.Errorf("CheckCompatibility of an incompatible schema: %+v %v", res, err)
	}
	_, err = rcl.CreateSchema(ctx, "users-value", sr.Schema{Schema: `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"string"}]}`})
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != 409 {
		t.Errorf("CreateSchema of an incompatible schema: %v", err)
	}
	if vs, err := rcl.DeleteSubject(ctx, "users-value", sr.SoftDelete); err != nil || len(vs) != 1 || vs[0] != 1 {
		t.Errorf("DeleteSubject: %v %v", vs, err)
	}
	if subs, err := rcl.Subjects(ctx); err != nil || len(subs) != 0 {
		t.Errorf("Subjects after the delete: %v %v", subs, err)
	}
}
