// Package history checks what a Kafka cluster did with records against what
// its producers were told: which records were acknowledged at which
// offsets, and what a full read of each partition returns afterwards. It
// finds lost, duplicated and reordered records, offsets that changed
// meaning, gaps, and records nobody sent — the claims "no acknowledged
// record is lost" and "an idempotent producer writes each record once"
// made checkable after kill -9, failover and churn.
//
// Values are made by Next, "<producer>/<seq>", so that a value names its
// producer and its place in that producer's order.
package history

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Record is one record read back.
type Record struct {
	TP
	Offset int64
	Value  string
}

type ack struct {
	tp     TP
	offset int64
}

// Checker collects sends and acknowledgements; it is safe for concurrent use.
type Checker struct {
	mu    sync.Mutex
	seqs  map[string]int64
	sent  map[string]bool
	acked map[string]ack
}

// New returns an empty checker.
func New() *Checker {
	return &Checker{seqs: map[string]int64{}, sent: map[string]bool{}, acked: map[string]ack{}}
}

// Next returns the next value of producer and records that it was sent.
func (c *Checker) Next(producer string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seqs[producer]++
	v := producer + "/" + strconv.FormatInt(c.seqs[producer], 10)
	c.sent[v] = true
	return v
}

// Acked records that value was acknowledged at offset of tp.
func (c *Checker) Acked(tp TP, offset int64, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acked[value] = ack{tp, offset}
}

// AckedCount is how many records were acknowledged.
func (c *Checker) AckedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked)
}

// Report lists every anomaly found, each as one line.
type Report struct {
	Lost, Duplicated, Reordered, Moved, Gaps, Unknown []string
	// Read is how many records the read held; Acked how many were acknowledged.
	Read, Acked int
}

// Err is nil when the report holds no anomaly.
func (r Report) Err() error {
	return anomalies([]anomaly{{"lost", r.Lost}, {"duplicated", r.Duplicated}, {"reordered", r.Reordered},
		{"moved", r.Moved}, {"gaps", r.Gaps}, {"unknown", r.Unknown}})
}

// anomaly is one kind of anomaly a report lists, one line each.
type anomaly struct {
	name  string
	lines []string
}

// anomalies joins an error per kind that holds lines (the first ten of
// them shown), or returns nil when none does.
func anomalies(kinds []anomaly) error {
	var errs []error
	for _, k := range kinds {
		if len(k.lines) == 0 {
			continue
		}
		shown := k.lines
		if len(shown) > 10 {
			shown = append(shown[:10:10], fmt.Sprintf("… and %d more", len(k.lines)-10))
		}
		errs = append(errs, fmt.Errorf("%d %s: %s", len(k.lines), k.name, strings.Join(shown, "; ")))
	}
	return errors.Join(errs...)
}

// Check compares the acknowledgements with read, which must be a full read
// of every partition written, in offset order per partition. With dense,
// offsets within a partition must follow each other without gaps (a log
// that is neither compacted nor holds transaction markers).
func (c *Checker) Check(read []Record, dense bool) Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := Report{Read: len(read), Acked: len(c.acked)}
	where := map[string][]Record{}
	byTP := map[TP][]Record{}
	for _, rec := range read {
		where[rec.Value] = append(where[rec.Value], rec)
		byTP[rec.TP] = append(byTP[rec.TP], rec)
		if !c.sent[rec.Value] {
			r.Unknown = append(r.Unknown, fmt.Sprintf("%s@%d=%q", rec.TP, rec.Offset, rec.Value))
		}
	}
	for v, recs := range where {
		if len(recs) > 1 {
			var at []string
			for _, rec := range recs {
				at = append(at, fmt.Sprintf("%s@%d", rec.TP, rec.Offset))
			}
			r.Duplicated = append(r.Duplicated, fmt.Sprintf("%q at %s", v, strings.Join(at, ",")))
		}
	}
	for v, a := range c.acked {
		recs := where[v]
		if len(recs) == 0 {
			r.Lost = append(r.Lost, fmt.Sprintf("%q acked at %s@%d", v, a.tp, a.offset))
			continue
		}
		if recs[0].TP != a.tp || recs[0].Offset != a.offset {
			r.Moved = append(r.Moved, fmt.Sprintf("%q acked at %s@%d, read at %s@%d", v, a.tp, a.offset, recs[0].TP, recs[0].Offset))
		}
	}
	tps := make([]TP, 0, len(byTP))
	for tp := range byTP {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	for _, tp := range tps {
		last := map[string]int64{} // producer → last sequence read in this partition
		for i, rec := range byTP[tp] {
			if i > 0 {
				prev := byTP[tp][i-1].Offset
				if rec.Offset <= prev || (dense && rec.Offset != prev+1) {
					r.Gaps = append(r.Gaps, fmt.Sprintf("%s: offset %d after %d", tp, rec.Offset, prev))
				}
			}
			producer, seq, ok := split(rec.Value)
			if !ok {
				continue
			}
			if seq <= last[producer] {
				r.Reordered = append(r.Reordered, fmt.Sprintf("%s@%d: %q after %s/%d", tp, rec.Offset, rec.Value, producer, last[producer]))
			}
			last[producer] = seq
		}
	}
	sort.Strings(r.Lost)
	sort.Strings(r.Duplicated)
	sort.Strings(r.Moved)
	return r
}

func split(v string) (string, int64, bool) {
	i := strings.LastIndexByte(v, '/')
	if i < 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(v[i+1:], 10, 64)
	return v[:i], seq, err == nil
}

// AckedRecords returns every acknowledged record with the partition and
// offset it was acknowledged at.
func (c *Checker) AckedRecords() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Record, 0, len(c.acked))
	for v, a := range c.acked {
		out = append(out, Record{TP: a.tp, Offset: a.offset, Value: v})
	}
	return out
}
