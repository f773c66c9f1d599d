package compat

// The client matrix: one scenario, run by every client as its users run it
// (Go clients in-process, kcat, Python and Node clients as subprocesses):
//
//  1. admin (where the client has an admin API): create, list, describe and
//     delete a topic through the client;
//  2. create the scenario topic (3 partitions) and produce keyed records with
//     headers in every codec the client supports;
//  3. idempotent producing (where the client has it);
//  4. consume everything back in a consumer group, commit, close; the group's
//     committed offsets must equal the partitions' end offsets;
//  5. produce more, restart the consumer in the same group: it must get
//     exactly the new records (nothing reprocessed, nothing lost);
//  6. static membership (where the client has it): consume with a
//     group.instance.id, close, produce more, restart with the same
//     instance id: again exactly the new records;
//  7. KIP-848 (where the client has it): steps 4 and 5 with the new
//     consumer group protocol;
//  8. transactions (where the client has them; matrix_txn_test.go): one
//     transaction committed and one aborted, each with offsets sent to a
//     group; read_committed sees exactly the committed records,
//     read_uncommitted sees both, the group has the committed offset.
//
// Each step is a subtest that records its capabilities (results_test.go).

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// matrixPartitions is the partition count of each scenario topic.
const matrixPartitions = 3

// brokerOverrides are the overrides every matrix broker runs with: groups
// form at once instead of after Kafka's 3 s initial rebalance delay.
var matrixOverrides = []string{"group.initial.rebalance.delay.ms=0"}

// producedRec is a record a client reported as acknowledged. Partition and
// Offset are -1 when the client does not report them (kcat).
type producedRec struct {
	Key       string
	Partition int32
	Offset    int64
}

// consumedRec is a record a client consumed.
type consumedRec struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
	Headers   [][2]string
}

// matrixClient is what a client under test must do; each method fails t on
// error and prints the client's own output when it does.
type matrixClient interface {
	// setAddr tells the client the broker's host:port.
	setAddr(addr string)
	// admin creates, lists, describes and deletes a topic through the
	// client's admin API (only called when the client has one).
	admin(t *testing.T, topic string)
	// createTopic creates topic with partitions partitions and
	// replication factor rf (through the client's admin API, or kadm for
	// clients without one).
	createTopic(t *testing.T, topic string, partitions int, rf int16)
	// produce sends the records keyed keys[i], with value valueFor(keys[i])
	// and headers headersFor(codec, i), compressed with codec ("none",
	// "gzip", "snappy", "lz4", "zstd"), idempotently if asked, with
	// acks=all, and returns what was acknowledged.
	produce(t *testing.T, topic, codec string, idempotent bool, keys []string) []producedRec
	// consume joins group (with group.instance.id instanceID if not
	// empty), subscribes to topic starting at the earliest offset when the
	// group has no commit, consumes until n records arrived, commits them,
	// closes the consumer cleanly and returns the records.
	consume(t *testing.T, topic, group, instanceID string, n int) []consumedRec
}

// kip848Client is a client whose consumer can use the KIP-848 protocol
// (ConsumerGroupHeartbeat, server-side assignment) instead of JoinGroup.
type kip848Client interface {
	// use848 switches later consume calls to the KIP-848 protocol.
	use848(on bool)
}

// matrixCase configures runMatrix for one client.
type matrixCase struct {
	client, version string
	codecs          []string
	hasAdmin        bool // run the admin step through the client
	idempotent      bool // the client has an idempotent producer
	static          bool // the client has group.instance.id
	kip848          bool // the client implements kip848Client
	txn             bool // the client implements txnClient
	txnNoOffsets    bool // its transactional producer cannot send offsets for a group
	perCodec        int  // records produced per codec (default 40)
}

// valueFor is the value every client produces for key: compressible, and
// different per key.
func valueFor(key string) string {
	return "value-of-" + key + "-" + strings.Repeat("x", 10+len(key)*4)
}

// headersFor is the headers every client attaches to the i-th record of a
// produce call with codec.
func headersFor(codec string, i int) [][2]string {
	return [][2]string{{"codec", codec}, {"seq", strconv.Itoa(i)}}
}

// customHeaders is implemented by clients that cannot give each record its
// own headers (kcat's -H applies to every record of a run).
type customHeaders interface {
	headers(codec string, i int) [][2]string
}

// expectedHeaders is what the i-th record of a produce call with codec
// carries when mc produced it.
func expectedHeaders(mc matrixClient, codec string, i int) [][2]string {
	if ch, ok := mc.(customHeaders); ok {
		return ch.headers(codec, i)
	}
	return headersFor(codec, i)
}

// matrixKeys is n keys for a phase and codec.
func matrixKeys(phase, codec string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%s-%03d", phase, codec, i)
	}
	return keys
}

// expectedRec is what a consumer must see for one produced key.
type expectedRec struct {
	producedRec
	Value   string
	Headers [][2]string
}

// runMatrix runs the scenario for one client against a fresh broker.
func runMatrix(t *testing.T, mc matrixClient, c matrixCase) {
	if c.perCodec == 0 {
		c.perCodec = 40
	}
	b := startBroker(t, t.TempDir(), matrixOverrides...)
	mc.setAddr(b.Addr())
	adm := newAdmin(t, b.Addr())
	base := strings.NewReplacer("/", "-", " ", "-", "(", "", ")", "", ",", "").Replace(strings.ToLower(c.client))
	topic := base + "-matrix"
	group := base + "-group"

	if c.hasAdmin {
		t.Run("admin", func(t *testing.T) {
			recordCap(t, c.client, c.version, capAdmin)
			mc.admin(t, base+"-admin")
		})
	}

	produced := map[string]expectedRec{} // by key
	var phase1 []string
	if !t.Run("produce", func(t *testing.T) {
		recordCap(t, c.client, c.version, capProduce)
		mc.createTopic(t, topic, matrixPartitions, 1)
		for _, codec := range c.codecs {
			keys := matrixKeys("p1", codec, c.perCodec)
			acks := mc.produce(t, topic, codec, false, keys)
			addProduced(t, mc, produced, acks, keys, codec)
			phase1 = append(phase1, keys...)
		}
	}) {
		t.FailNow()
	}

	if c.idempotent {
		t.Run("idempotent", func(t *testing.T) {
			recordCap(t, c.client, c.version, capIdempotent)
			// The last codec the client supports, idempotent, in two
			// calls: the second reuses the producer id sequence state
			// on the broker for a new producer.
			codec := c.codecs[len(c.codecs)-1]
			keys := matrixKeys("p1i", codec, c.perCodec)
			acks := mc.produce(t, topic, codec, true, keys)
			addProduced(t, mc, produced, acks, keys, codec)
			phase1 = append(phase1, keys...)
		})
	}

	// Consume everything in a group, commit, close.
	if !t.Run("group", func(t *testing.T) {
		recordCap(t, c.client, c.version, capConsume, capGroups)
		got := mc.consume(t, topic, group, "", len(phase1))
		checkConsumed(t, got, produced, phase1, nil)
		checkCommitted(t, adm, group, topic)
	}) {
		t.FailNow()
	}

	// Restart: a new consumer in the group gets exactly the new records.
	t.Run("resume", func(t *testing.T) {
		recordCap(t, c.client, c.version, capGroups)
		keys := matrixKeys("p2", "none", 60)
		acks := mc.produce(t, topic, "none", false, keys)
		startAt := endOffsets(t, adm, topic)
		addProduced(t, mc, produced, acks, keys, "none")
		got := mc.consume(t, topic, group, "", len(keys))
		checkConsumed(t, got, produced, keys, startAt)
		checkCommitted(t, adm, group, topic)
	})

	if c.static {
		t.Run("static", func(t *testing.T) {
			recordCap(t, c.client, c.version, capStatic)
			sgroup := group + "-static"
			// The new group starts from the earliest offset.
			all := make([]string, 0, len(produced))
			for k := range produced {
				all = append(all, k)
			}
			got := mc.consume(t, topic, sgroup, "instance-1", len(all))
			checkConsumed(t, got, produced, all, nil)
			// Restart with the same instance id: the broker still holds
			// the static member (it does not leave on close), and must
			// let its replacement in at once with its assignment.
			keys := matrixKeys("p3", "none", 60)
			acks := mc.produce(t, topic, "none", false, keys)
			startAt := endOffsets(t, adm, topic)
			addProduced(t, mc, produced, acks, keys, "none")
			got = mc.consume(t, topic, sgroup, "instance-1", len(keys))
			checkConsumed(t, got, produced, keys, startAt)
			checkCommitted(t, adm, sgroup, topic)
		})
	}
	if c.kip848 {
		t.Run("kip848", func(t *testing.T) {
			recordCap(t, c.client, c.version, capKIP848)
			kc, ok := mc.(kip848Client)
			if !ok {
				t.Fatalf("%T does not implement kip848Client", mc)
			}
			kc.use848(true)
			defer kc.use848(false)
			ngroup := group + "-848"
			all := make([]string, 0, len(produced))
			for k := range produced {
				all = append(all, k)
			}
			got := mc.consume(t, topic, ngroup, "", len(all))
			checkConsumed(t, got, produced, all, nil)
			checkCommitted(t, adm, ngroup, topic)
			keys := matrixKeys("p4", "none", 60)
			acks := mc.produce(t, topic, "none", false, keys)
			startAt := endOffsets(t, adm, topic)
			addProduced(t, mc, produced, acks, keys, "none")
			got = mc.consume(t, topic, ngroup, "", len(keys))
			checkConsumed(t, got, produced, keys, startAt)
			checkCommitted(t, adm, ngroup, topic)
		})
	}
	if c.txn {
		t.Run("transactions", func(t *testing.T) {
			recordCap(t, c.client, c.version, capTxn)
			runTxnStep(t, mc, c, b.Addr(), base, topic)
		})
	}
	b.Alive()
}

// addProduced adds the acknowledged records to produced.
func addProduced(t *testing.T, mc matrixClient, produced map[string]expectedRec, acks []producedRec, keys []string, codec string) {
	t.Helper()
	if len(acks) != len(keys) {
		t.Fatalf("%d records acknowledged, %d produced", len(acks), len(keys))
	}
	byKey := map[string]producedRec{}
	for _, a := range acks {
		if _, dup := byKey[a.Key]; dup {
			t.Fatalf("key %q acknowledged twice", a.Key)
		}
		byKey[a.Key] = a
	}
	for i, k := range keys {
		a, ok := byKey[k]
		if !ok {
			t.Fatalf("key %q was not acknowledged", k)
		}
		produced[k] = expectedRec{producedRec: a, Value: valueFor(k), Headers: expectedHeaders(mc, codec, i)}
	}
}

// endOffsets is the topic's end offset per partition, from the broker.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("ListEndOffsets %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// checkConsumed checks that got holds each of keys exactly once, with the
// produced value, headers, partition and offset, that each partition's
// records come in increasing offset order, and that nothing else arrived.
// When startAt is given (the end offsets taken after the new records were
// produced), each partition's first consumed offset must be the first new
// record's offset: nothing before it was reprocessed.
func checkConsumed(t *testing.T, got []consumedRec, produced map[string]expectedRec, keys []string, startAt map[int32]int64) {
	t.Helper()
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	seen := map[string]bool{}
	last := map[int32]int64{}
	first := map[int32]int64{}
	perPart := map[int32]int{}
	for _, r := range got {
		e, ok := produced[r.Key]
		switch {
		case !ok:
			t.Fatalf("consumed unknown key %q at %d/%d", r.Key, r.Partition, r.Offset)
		case !want[r.Key]:
			t.Fatalf("consumed %q (partition %d offset %d) again: it was committed before this consumer started", r.Key, r.Partition, r.Offset)
		case seen[r.Key]:
			t.Fatalf("consumed %q twice (partition %d offset %d)", r.Key, r.Partition, r.Offset)
		}
		seen[r.Key] = true
		if e.Partition >= 0 && (r.Partition != e.Partition || r.Offset != e.Offset) {
			t.Fatalf("key %q consumed at %d/%d, acknowledged at %d/%d", r.Key, r.Partition, r.Offset, e.Partition, e.Offset)
		}
		if r.Value != e.Value {
			t.Fatalf("key %q: value %.60q, want %.60q", r.Key, r.Value, e.Value)
		}
		if fmt.Sprint(r.Headers) != fmt.Sprint(e.Headers) {
			t.Fatalf("key %q: headers %v, want %v", r.Key, r.Headers, e.Headers)
		}
		if l, ok := last[r.Partition]; ok && r.Offset <= l {
			t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, l)
		}
		if _, ok := first[r.Partition]; !ok {
			first[r.Partition] = r.Offset
		}
		last[r.Partition] = r.Offset
		perPart[r.Partition]++
	}
	var missing []string
	for _, k := range keys {
		if !seen[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("%d of %d records not consumed, e.g. %v", len(missing), len(keys), missing[:min(5, len(missing))])
	}
	// Offsets within each partition are dense over the new records: the
	// first one is end - count.
	if startAt != nil {
		for p, f := range first {
			if wantFirst := startAt[p] - int64(perPart[p]); f != wantFirst {
				t.Fatalf("partition %d: the restarted consumer began at offset %d, want %d (the committed offset)", p, f, wantFirst)
			}
		}
	}
}

// checkCommitted checks that group's committed offsets for topic equal the
// partitions' end offsets.
func checkCommitted(t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	ctx := testCtx(t)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	// A consumer that committed and closed: its commit is visible at once.
	deadline := time.Now().Add(10 * time.Second)
	for {
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("FetchOffsets %s: %v", group, err)
		}
		var diffs []string
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := committed.Lookup(topic, o.Partition)
			switch {
			case !ok && o.Offset == 0:
			case !ok:
				diffs = append(diffs, fmt.Sprintf("partition %d: no commit, end %d", o.Partition, o.Offset))
			case c.Err != nil:
				diffs = append(diffs, fmt.Sprintf("partition %d: %v", o.Partition, c.Err))
			case c.At != o.Offset:
				diffs = append(diffs, fmt.Sprintf("partition %d: committed %d, end %d", o.Partition, c.At, o.Offset))
			}
		})
		if len(diffs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s committed offsets differ from the end offsets: %v", group, diffs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
