package compat

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKcatReadsCompactedTopic: kcat (librdkafka) reads a topic the cleaner
// has compacted, with gaps between offsets, and sees the newest value of
// every key, in offset order.
func TestKcatReadsCompactedTopic(t *testing.T) {
	b := startBroker(t, t.TempDir(), "log.cleaner.backoff.ms=50")
	adm := newAdmin(t, b.Addr())
	str := func(s string) *string { return &s }
	createTopic(t, adm, "compacted", 1, map[string]*string{
		"cleanup.policy":            str("compact"),
		"segment.bytes":             str("16384"),
		"min.cleanable.dirty.ratio": str("0.01"),
	})
	// Small batches, so the records spread over many closed segments the cleaner may compact.
	cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic("compacted"), kgo.ProducerBatchMaxBytes(4096))
	const keys, n = 20, 2000
	last := map[string]string{}
	var rs []*kgo.Record
	for i := 0; i < n; i++ {
		k, v := fmt.Sprintf("k%02d", i%keys), fmt.Sprintf("v%05d-%s", i, strings.Repeat("x", 100))
		last[k] = v
		rs = append(rs, &kgo.Record{Key: []byte(k), Value: []byte(v)})
	}
	produceSync(t, cl, rs)

	var lines []string
	waitFor(t, 30*time.Second, "the cleaner to compact the topic", func() bool {
		out := runKcat(t, "", "-C", "-b", b.Addr(), "-t", "compacted", "-o", "beginning", "-e", "-q", "-f", "%o %k %s\n")
		lines = strings.Split(strings.TrimSpace(out), "\n")
		return len(lines) < n/2
	})
	seen := map[string]string{}
	prev := int64(-1)
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 {
			t.Fatalf("kcat line %q", l)
		}
		off, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || off <= prev {
			t.Fatalf("offset %q after %d: not increasing", f[0], prev)
		}
		prev = off
		seen[f[1]] = f[2]
	}
	if len(seen) != keys {
		t.Fatalf("kcat saw %d keys, want %d", len(seen), keys)
	}
	for k, v := range last {
		if seen[k] != v {
			t.Errorf("key %s: newest value read %.10q, want %.10q", k, seen[k], v)
		}
	}
	t.Logf("%d records of %d left after compaction; last offset %d", len(lines), n, prev)
}
