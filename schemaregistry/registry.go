// Package schemaregistry is kbroker's built-in Schema Registry: Confluent
// Schema Registry's REST API (its JSON shapes, content types, error codes
// and messages), with the schemas, configs and modes kept in the compacted
// topic _schemas in Confluent's own key and value JSON, so either registry
// reads what the other wrote.
//
// The registry knows no broker room. Like the web console it is a Kafka
// client (franz-go's kgo and kadm) of the broker's own listener over
// loopback: it creates _schemas, reads it from the start into memory
// (state.go) and keeps reading; a write is a record produced to it and
// answered once read back. Schemas are parsed by well-kept libraries:
// hamba/avro (avro.go), bufbuild/protocompile (protobuf.go) and
// santhosh-tekuri/jsonschema (jsonschema.go); compatibility.go applies the
// seven compatibility levels with each type's rules.
//
// Writes go to one writer, the registry of the broker that leads
// _schemas partition 0; the others forward them (forward.go) and answer
// once their own view holds what the writer wrote. In a registry writes
// are serialized (writeMu) and each first reads the log to its end
// (barrier), so it decides on everything written before it. Two
// registries that write at once (while the leadership moves) are kept
// safe by the reader, which refuses a record that would reuse an id for
// another schema or give a live version another id; the losing write is
// retried.
//
// Locks: writeMu (one write at a time, held across its Kafka round trips)
// before mu (the state, written by the reader once per fetch, read by
// every request); nothing else is taken under mu.
package schemaregistry

import (
	"context"
	"crypto/tls"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// DefaultTopic is Confluent's kafkastore.topic.
const DefaultTopic = "_schemas"

// Config is what the registry needs from the broker.
type Config struct {
	// Bootstrap returns the listener of this broker the registry connects
	// to, or why there is none yet (listeners not open) or at all.
	Bootstrap func() (Endpoint, error)
	// Topic is the store; default _schemas.
	Topic string
	// Timeout bounds one request's Kafka work (default 30 s).
	Timeout time.Duration
	// NodeID is this broker's id: the registry writes when its broker
	// leads _schemas partition 0 and forwards writes otherwise
	// (forward.go); negative: it always writes.
	NodeID int32
	// AuthorizeWrite, when set, decides whether the caller of a write
	// (register, delete, config and mode changes) may make it: user is
	// the HTTP Basic user ("" without a login), host the client's
	// address. A refusal is answered 403 (40301) before anything is read
	// or forwarded; the writer checks a forwarded write again.
	AuthorizeWrite func(user, host string) bool
	// MaxBodyBytes bounds a request body (default 1 MiB, about Kafka's
	// default largest record): a larger one is answered 413.
	MaxBodyBytes int64
	// ForwardTLS, when set, is the client TLS configuration of writes
	// forwarded to a writer that serves https:// only (its certificate
	// checked against it); nil: writes are forwarded to http:// only.
	ForwardTLS *tls.Config
	Logger     *slog.Logger
}

// Endpoint is a Kafka listener of the broker as the registry dials it.
type Endpoint struct {
	Addr string // host:port
	// SASL logs the registry in; nil: none.
	SASL sasl.Mechanism
	// TLS encrypts the connection (SSL, SASL_SSL); nil: none.
	TLS *tls.Config
}

// Registry serves the REST API from its view of _schemas. Start it with
// Start, stop it with Close.
type Registry struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux

	// ctx is cancelled by Close; it bounds the reader and every request.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // run
	// readyCh is closed once the initial load reached the end offset.
	readyCh   chan struct{}
	startOnce sync.Once

	// client sends forwarded writes to the writer.
	client *http.Client
	// lastWarning is the last reason logged for writing here instead of
	// forwarding (warnOnce); warnMu is a leaf lock.
	warnMu      sync.Mutex
	lastWarning string

	// names caches the record name of a schema id (validation.go).
	names sync.Map // int → string

	// writeMu serializes writes: one decision and its record at a time.
	writeMu sync.Mutex

	mu struct {
		sync.RWMutex
		st *state
		// applied is the offset after the last record applied.
		applied int64
		// advanced is closed (and replaced) whenever applied moves.
		advanced chan struct{}
		ready    bool
		cl       *kgo.Client  // nil while not connected
		adm      *kadm.Client // over cl
	}
}

// New returns a registry that has not connected yet; Handler serves it.
func New(cfg Config) *Registry {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	r := &Registry{cfg: cfg, log: cfg.Logger, readyCh: make(chan struct{}), client: newForwardClient(cfg.Timeout, cfg.ForwardTLS)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.mu.st = newState()
	r.mu.advanced = make(chan struct{})
	r.mux = r.routes()
	return r
}

// Handler serves the REST API (mount it at /).
func (r *Registry) Handler() http.Handler { return r.mux }

// Start starts the goroutine that connects to the broker and reads
// _schemas; requests wait for its initial load (bounded by Timeout).
func (r *Registry) Start() {
	r.startOnce.Do(func() {
		if r.ctx.Err() != nil {
			return
		}
		r.wg.Add(1)
		go r.run()
	})
}

// Close stops the reader and closes the Kafka client; requests in flight
// fail. Safe to call more than once.
func (r *Registry) Close() {
	r.startOnce.Do(func() {}) // no Start after Close
	r.cancel()
	r.wg.Wait()
	r.client.CloseIdleConnections()
}

// requestCtx bounds one request: its own context, Timeout and Close.
func (r *Registry) requestCtx(req *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(req.Context(), r.cfg.Timeout)
	stop := context.AfterFunc(r.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// view runs f with the state read-locked, once the registry is loaded.
func (r *Registry) view(ctx context.Context, f func(st *state) error) error {
	if err := r.waitReady(ctx); err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return f(r.mu.st)
}

// A write that another registry's concurrent write made the reader
// refuse is decided again until the request's Timeout; each retry first
// waits a random while, up to retryJitter times the attempt (at most
// maxJitterSteps times), so that two writers stop colliding.
const (
	retryJitter    = 10 * time.Millisecond
	maxJitterSteps = 20
)

// plan is what a write decided: the records to produce (none: nothing to
// write), the answer, and check, which tells (on the state after the
// records were read back) whether they took effect.
type plan struct {
	records []*kgo.Record
	result  any
	check   func(st *state) bool
}

// write runs decide on the state as of the log's end, produces its
// records and answers once they are read back: one write at a time.
func (r *Registry) write(ctx context.Context, decide func(st *state) (plan, error)) (any, error) {
	if err := r.waitReady(ctx); err != nil {
		return nil, err
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for attempt := 1; ; attempt++ {
		if err := r.barrier(ctx); err != nil {
			return nil, err
		}
		p, err := r.decideLocked(decide)
		if err != nil || len(p.records) == 0 {
			return p.result, err
		}
		off, err := r.produce(ctx, p.records...)
		if err != nil {
			return nil, err
		}
		if err := r.waitApplied(ctx, off); err != nil {
			return nil, err
		}
		r.mu.RLock()
		ok := p.check == nil || p.check(r.mu.st)
		var repairs []*kgo.Record
		if !ok {
			repairs = repairRecords(r.mu.st, p.records)
		}
		r.mu.RUnlock()
		if ok {
			return p.result, nil
		}
		r.log.Warn("schema registry: a concurrent write from another broker won; deciding again", "repairs", len(repairs))
		if len(repairs) > 0 {
			if _, err := r.produce(ctx, repairs...); err != nil {
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, errTimeout("Write to the Kafka store timed out while retrying", ctx.Err())
		case <-time.After(time.Duration(rand.Int64N(int64(retryJitter) * int64(min(attempt, maxJitterSteps))))):
		}
	}
}

// decideLocked runs decide with the state read-locked.
func (r *Registry) decideLocked(decide func(st *state) (plan, error)) (plan, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return decide(r.mu.st)
}

// repairRecords re-writes, for each SCHEMA record of ours that the reader
// refused because the key already held another writer's version, that
// version's value: the topic is compacted, so the latest record of a key
// must be the one the registry applied, or a restart after compaction
// would read ours instead.
func repairRecords(st *state, ours []*kgo.Record) []*kgo.Record {
	var out []*kgo.Record
	for _, rec := range ours {
		dr, err := decodeRecord(rec.Key, rec.Value)
		if err != nil || dr.key.KeyType != keySchema || dr.schema == nil {
			continue
		}
		won := st.subjects[dr.key.subject()][dr.key.Version]
		if won != nil && (won.ID != dr.schema.ID || won.contentKey() != dr.schema.contentKey()) {
			out = append(out, &kgo.Record{Key: rec.Key, Value: encodeSchemaValue(*won)})
		}
	}
	return out
}
