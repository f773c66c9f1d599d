package history

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Transactions, Elle-style: transactional producers write one record per
// partition in each transaction and say how it ended; read_committed
// consumers report every record they see in the order they see it; a
// processor transaction may also report which records it read (a
// read_process_write chain). TxnChecker then looks for what read_committed
// must never show:
//
//   - an aborted read: a record of an aborted transaction;
//   - an uncommitted read: a record of a transaction that never ended
//     (never committed nor aborted, and not of unknown outcome);
//   - a lost committed write: a record of a committed transaction missing
//     from the final read;
//   - a fractured transaction: visible in some partitions of the final
//     read and not in others;
//   - non-monotonic offsets: a consumer seeing a partition's offsets go
//     back without having restarted;
//   - duplicates: one record at two offsets;
//   - processed twice: a record read (ReadIn) by two transactions that
//     are both visible in the final read, which exactly-once processing
//     (a read_process_write chain sending its offsets in the transaction)
//     forbids; a processor's reads also count for aborted and
//     uncommitted reads;
//   - G1c: cyclic information flow, a dependency cycle that holds a
//     write-read edge (T2 read what T1 wrote) as well as write-write
//     edges (T1's record precedes T2's in a partition). It is looked for
//     among records rather than transactions (txn_cycles.go): a
//     transaction's records reach its partitions at different times, so
//     a path entering a transaction in one partition and leaving it in
//     another is no cycle. Pure write-write cycles among transactions
//     (G0) are counted but not an error: Kafka orders two transactions'
//     records per partition by arrival, so they may interleave
//     differently in two partitions without either reading the other.
//
// Values are "<txn>#<n>": the transaction id, then the record's index in
// it, so a value names its transaction.

// Outcome is how a transaction ended, as its producer saw it.
type Outcome int

// The outcomes.
const (
	// Open: not ended yet (or its producer died before ending it).
	Open Outcome = iota
	// Committed: EndTxn(commit) succeeded.
	Committed
	// Aborted: EndTxn(abort) succeeded, or the transaction never got its
	// first record acknowledged and the producer moved on.
	Aborted
	// Unknown: the commit's answer was lost; it may or may not have
	// committed.
	Unknown
)

func (o Outcome) String() string {
	return [...]string{"open", "committed", "aborted", "unknown"}[o]
}

type txnState struct {
	outcome Outcome
	writes  map[string]TP // value → partition
	readIn  []string      // values this transaction read (processors)
}

// TxnChecker collects transactions and reads; it is safe for concurrent
// use.
type TxnChecker struct {
	mu    sync.Mutex
	n     map[string]int // producer → transactions begun
	txns  map[string]*txnState
	reads map[string][]Record // consumer → records in the order seen
	// restarts holds, per consumer, the indexes in reads at which it
	// started reading again from an earlier offset on purpose.
	restarts map[string]map[int]bool
}

// NewTxnChecker returns an empty checker.
func NewTxnChecker() *TxnChecker {
	return &TxnChecker{n: map[string]int{}, txns: map[string]*txnState{}, reads: map[string][]Record{}, restarts: map[string]map[int]bool{}}
}

// Begin starts a transaction of producer and returns its id.
func (c *TxnChecker) Begin(producer string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[producer]++
	id := fmt.Sprintf("%s.%d", producer, c.n[producer])
	c.txns[id] = &txnState{writes: map[string]TP{}}
	return id
}

// Value returns the value of record i of transaction txn and notes that
// txn writes it to tp.
func (c *TxnChecker) Value(txn string, i int, tp TP) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := fmt.Sprintf("%s#%d", txn, i)
	c.txns[txn].writes[v] = tp
	return v
}

// ReadIn notes that transaction txn read the records with values (a
// processor's input).
func (c *TxnChecker) ReadIn(txn string, values ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.txns[txn].readIn = append(c.txns[txn].readIn, values...)
}

// End records how transaction txn ended.
func (c *TxnChecker) End(txn string, o Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.txns[txn].outcome = o
}

// Read records that consumer saw rec (in the order of the calls).
func (c *TxnChecker) Read(consumer string, rec Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[consumer] = append(c.reads[consumer], rec)
}

// Restart notes that consumer starts again from an earlier position (a new
// client after a failure), so going back is not an anomaly there.
func (c *TxnChecker) Restart(consumer string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.restarts[consumer] == nil {
		c.restarts[consumer] = map[int]bool{}
	}
	c.restarts[consumer][len(c.reads[consumer])] = true
}

// Counts returns how many transactions ended each way.
func (c *TxnChecker) Counts() map[Outcome]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[Outcome]int{}
	for _, t := range c.txns {
		out[t.outcome]++
	}
	return out
}

// TxnReport lists the anomalies found, one line each.
type TxnReport struct {
	AbortedReads, UncommittedReads, LostCommitted, Fractured, NonMonotonic, Duplicated, ProcessedTwice, Unknown, G1c []string
	// G0 counts pure write-write cycles (allowed; see the package comment).
	G0 int
	// Txns counts transactions by outcome; Reads the records consumers saw;
	// ReadIns the records processors read in transactions visible in the
	// final read.
	Txns           map[Outcome]int
	Reads, ReadIns int
}

// Err is nil when the report holds no anomaly.
func (r TxnReport) Err() error {
	return anomalies([]anomaly{{"aborted reads", r.AbortedReads}, {"uncommitted reads", r.UncommittedReads},
		{"lost committed writes", r.LostCommitted}, {"fractured transactions", r.Fractured},
		{"non-monotonic reads", r.NonMonotonic}, {"duplicated", r.Duplicated}, {"processed twice", r.ProcessedTwice},
		{"unknown values", r.Unknown}, {"G1c cycles", r.G1c}})
}

// txnOf splits a value into its transaction id.
func txnOf(v string) (string, bool) {
	i := strings.LastIndexByte(v, '#')
	if i < 0 {
		return "", false
	}
	return v[:i], true
}

// Check looks for anomalies in what the consumers saw and in final, a
// read_committed full read of every partition written, in offset order
// per partition.
func (c *TxnChecker) Check(final []Record) TxnReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := TxnReport{Txns: map[Outcome]int{}}
	for _, t := range c.txns {
		r.Txns[t.outcome]++
	}
	check := func(who string, rec Record) {
		id, ok := txnOf(rec.Value)
		t := c.txns[id]
		if !ok || t == nil {
			r.Unknown = append(r.Unknown, fmt.Sprintf("%s: %s@%d=%q", who, rec.TP, rec.Offset, rec.Value))
			return
		}
		switch t.outcome {
		case Aborted:
			r.AbortedReads = append(r.AbortedReads, fmt.Sprintf("%s: %s@%d=%q", who, rec.TP, rec.Offset, rec.Value))
		case Open:
			r.UncommittedReads = append(r.UncommittedReads, fmt.Sprintf("%s: %s@%d=%q", who, rec.TP, rec.Offset, rec.Value))
		}
	}
	consumers := make([]string, 0, len(c.reads))
	for who := range c.reads {
		consumers = append(consumers, who)
	}
	sort.Strings(consumers)
	for _, who := range consumers {
		last := map[TP]int64{}
		for i, rec := range c.reads[who] {
			r.Reads++
			check(who, rec)
			if c.restarts[who][i] {
				last = map[TP]int64{}
			}
			if prev, ok := last[rec.TP]; ok && rec.Offset <= prev {
				r.NonMonotonic = append(r.NonMonotonic, fmt.Sprintf("%s: %s offset %d after %d", who, rec.TP, rec.Offset, prev))
			}
			last[rec.TP] = rec.Offset
		}
	}
	seen := map[string][]Record{}
	byTP := map[TP][]Record{}
	for _, rec := range final {
		check("final read", rec)
		seen[rec.Value] = append(seen[rec.Value], rec)
		byTP[rec.TP] = append(byTP[rec.TP], rec)
	}
	for v, recs := range seen {
		if len(recs) > 1 {
			r.Duplicated = append(r.Duplicated, fmt.Sprintf("%q read %d times", v, len(recs)))
		}
	}
	for id, t := range c.txns {
		var in, out []string
		for v, tp := range t.writes {
			if len(seen[v]) > 0 {
				in = append(in, tp.String())
			} else {
				out = append(out, tp.String())
			}
		}
		sort.Strings(in)
		sort.Strings(out)
		if t.outcome == Committed && len(out) > 0 {
			r.LostCommitted = append(r.LostCommitted, fmt.Sprintf("%s: missing in %v", id, out))
		}
		if t.outcome != Committed && len(in) > 0 && len(out) > 0 {
			r.Fractured = append(r.Fractured, fmt.Sprintf("%s (%s): visible in %v, not in %v", id, t.outcome, in, out))
		}
	}
	// A processor's reads: never of an aborted or open transaction, and
	// each input record in at most one visible transaction.
	readers := map[string][]string{} // value → visible transactions that read it
	for id, t := range c.txns {
		visible := false
		for v := range t.writes {
			visible = visible || len(seen[v]) > 0
		}
		for _, v := range t.readIn {
			check("transaction "+id, Record{Value: v, Offset: -1})
			if visible {
				r.ReadIns++
				readers[v] = append(readers[v], id)
			}
		}
	}
	for v, ids := range readers {
		if len(ids) > 1 {
			sort.Strings(ids)
			r.ProcessedTwice = append(r.ProcessedTwice, fmt.Sprintf("%q read by %s", v, strings.Join(ids, ", ")))
		}
	}
	r.G1c, r.G0 = c.cyclesLocked(byTP)
	sort.Strings(r.AbortedReads)
	sort.Strings(r.UncommittedReads)
	sort.Strings(r.LostCommitted)
	sort.Strings(r.Fractured)
	sort.Strings(r.Duplicated)
	sort.Strings(r.ProcessedTwice)
	return r
}
