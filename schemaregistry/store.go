package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The registry's store is the compacted topic _schemas (one partition),
// read from its start into state by one goroutine (run) and written by
// ProduceSync. A write is answered only once the reader has applied the
// offset it was written at (read-your-writes).

// run owns the Kafka client: it connects (retrying until the broker's
// listeners are open), creates _schemas if missing, reads it to its end,
// marks the registry ready and keeps reading until Close.
func (r *Registry) run() {
	defer r.wg.Done()
	backoff := 100 * time.Millisecond
	for r.ctx.Err() == nil {
		err := r.connectAndRead()
		if r.ctx.Err() != nil {
			return
		}
		r.log.Warn("schema registry: cannot read "+r.cfg.Topic+", retrying", "err", err, "in", backoff)
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// connectAndRead is one life of the Kafka client; it returns when the
// client fails to set up (to be retried) or at Close.
func (r *Registry) connectAndRead() error {
	ep, err := r.cfg.Bootstrap()
	if err != nil {
		return err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(ep.Addr),
		kgo.ClientID("kbroker-schema-registry"),
		kgo.DefaultProduceTopic(r.cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.FetchMaxWait(time.Second),
		// A just-created _schemas and a moved leader are seen soon.
		kgo.MetadataMinAge(100 * time.Millisecond),
	}
	if ep.SASL != nil {
		opts = append(opts, kgo.SASL(ep.SASL))
	}
	if ep.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(ep.TLS.Clone()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	end, err := r.ensureTopic(adm)
	if err != nil {
		return err
	}
	// Consuming starts once the topic exists: a consumer of a missing
	// topic would wait for its next metadata retry. Each life of the
	// client reads the topic from its start into a fresh state.
	r.mu.Lock()
	r.mu.st, r.mu.applied = newState(), 0
	r.mu.Unlock()
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.cfg.Topic: {0: kgo.NewOffset().AtStart()}})
	r.mu.Lock()
	r.mu.cl, r.mu.adm = cl, adm
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.mu.cl, r.mu.adm = nil, nil
		r.mu.Unlock()
	}()
	r.log.Info("schema registry: loading "+r.cfg.Topic, "end_offset", end)
	r.read(cl, end)
	return nil
}

// ensureTopic creates _schemas (1 partition, compacted, replication
// min(3, live brokers)) if it is missing and returns its end offset.
func (r *Registry) ensureTopic(adm *kadm.Client) (int64, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.Timeout)
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return 0, fmt.Errorf("metadata: %w", err)
	}
	rf := int16(min(3, len(md.Brokers)))
	compact := "compact"
	resp, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"cleanup.policy": &compact}, r.cfg.Topic)
	switch {
	case err == nil && resp.Err == nil:
		r.log.Info("schema registry: created "+r.cfg.Topic, "replication_factor", rf)
	case errors.Is(err, kerr.TopicAlreadyExists) || errors.Is(resp.Err, kerr.TopicAlreadyExists):
		r.warnIfNotCompacted(ctx, adm)
	case err != nil:
		return 0, fmt.Errorf("creating %s: %w", r.cfg.Topic, err)
	default:
		return 0, fmt.Errorf("creating %s: %w", r.cfg.Topic, resp.Err)
	}
	// A topic just created may take a moment to have a leader: ask again
	// until it answers or the timeout passes.
	for {
		end, err := endOffset(ctx, adm, r.cfg.Topic)
		if err == nil {
			return end, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("end offset of %s: %w", r.cfg.Topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// warnIfNotCompacted logs an existing _schemas that is not compacted:
// retention would delete schemas still in use (Confluent refuses to start
// on one).
func (r *Registry) warnIfNotCompacted(ctx context.Context, adm *kadm.Client) {
	rcs, err := adm.DescribeTopicConfigs(ctx, r.cfg.Topic)
	if err != nil {
		return
	}
	rc, err := rcs.On(r.cfg.Topic, nil)
	if err != nil {
		return
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.MaybeValue() != "compact" {
			r.log.Warn("schema registry: "+r.cfg.Topic+" is not compacted; retention will delete schemas", "cleanup.policy", c.MaybeValue())
		}
	}
}

// endOffset is the end offset of topic's partition 0.
func endOffset(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok {
		return 0, errors.New("no partition 0")
	}
	return o.Offset, o.Err
}

// progressEvery is how often the initial load logs its progress.
const progressEvery = 5 * time.Second

// read applies records until Close; the registry is ready once the
// records before end (the end offset at start) are applied.
func (r *Registry) read(cl *kgo.Client, end int64) {
	start, lastLog := time.Now(), time.Now()
	var records, skipped int
	r.markLoaded(end, start, records, skipped)
	for {
		fs := cl.PollFetches(r.ctx)
		if r.ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				r.log.Warn("schema registry: reading "+topic, "partition", p, "err", err)
			}
		})
		var last int64 = -1
		r.mu.Lock()
		fs.EachRecord(func(rec *kgo.Record) {
			records++
			last = rec.Offset
			dr, err := decodeRecord(rec.Key, rec.Value)
			if err == nil {
				err = r.mu.st.apply(dr)
			}
			if err != nil {
				skipped++
				r.log.Warn("schema registry: skipping a "+r.cfg.Topic+" record", "offset", rec.Offset, "err", err)
			}
		})
		if last >= 0 {
			r.mu.applied = last + 1
			close(r.mu.advanced)
			r.mu.advanced = make(chan struct{})
		}
		r.mu.Unlock()
		if !r.isReady() && time.Since(lastLog) >= progressEvery {
			lastLog = time.Now()
			r.log.Info("schema registry: loading "+r.cfg.Topic, "offset", last+1, "end_offset", end, "records", records)
		}
		r.markLoaded(end, start, records, skipped)
	}
}

// markLoaded makes the registry ready once the initial load reached end.
func (r *Registry) markLoaded(end int64, start time.Time, records, skipped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.ready || r.mu.applied < end {
		return
	}
	r.mu.ready = true
	close(r.readyCh)
	r.log.Info("schema registry: loaded "+r.cfg.Topic, "records", records, "skipped", skipped,
		"subjects", len(r.mu.st.subjects), "schemas", len(r.mu.st.byID), "took", time.Since(start).Round(time.Millisecond))
}

// Ready reports why the registry does not serve yet (nil once _schemas
// is loaded): the /readyz of its listener.
func (r *Registry) Ready() error {
	if !r.isReady() {
		return errNotReady
	}
	return nil
}

func (r *Registry) isReady() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.mu.ready
}

var errNotReady = errors.New("the schema registry is loading " + DefaultTopic + " or cannot reach the broker's listener")

// waitReady waits for the initial load.
func (r *Registry) waitReady(ctx context.Context) error {
	select {
	case <-r.readyCh:
		return nil
	case <-ctx.Done():
		return errTimeout("Schema registry not ready", errNotReady)
	}
}

// waitApplied waits until the reader applied every record before offset.
func (r *Registry) waitApplied(ctx context.Context, offset int64) error {
	for {
		r.mu.RLock()
		applied, ch := r.mu.applied, r.mu.advanced
		r.mu.RUnlock()
		if applied >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return errTimeout("Write to the Kafka store timed out while waiting for the registry to read it back", ctx.Err())
		}
	}
}

// produce writes records to _schemas partition 0 and returns the offset
// after the last one.
func (r *Registry) produce(ctx context.Context, recs ...*kgo.Record) (int64, error) {
	r.mu.RLock()
	cl := r.mu.cl
	r.mu.RUnlock()
	if cl == nil {
		return 0, errStore("Error while writing to the backend Kafka store", errNotReady)
	}
	for _, rec := range recs {
		rec.Topic, rec.Partition = r.cfg.Topic, 0
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		switch {
		case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
			return 0, &Error{statusUnprocessable, 42209, "Write failed because schema is too large"}
		case errors.Is(err, context.DeadlineExceeded):
			return 0, errTimeout("Write to the Kafka store timed out while", err)
		}
		return 0, errStore("Error while writing to the backend Kafka store", err)
	}
	return res[len(res)-1].Record.Offset + 1, nil
}

// barrier brings the state to the log's end as of now: it writes a NOOP
// record (Confluent's way) and waits until the reader has applied it, so
// a write decides on every record written before it, by any broker.
func (r *Registry) barrier(ctx context.Context) error {
	off, err := r.produce(ctx, &kgo.Record{Key: encodeKey(recordKey{KeyType: keyNoop})})
	if err != nil {
		return err
	}
	return r.waitApplied(ctx, off)
}
