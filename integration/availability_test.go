package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Availability measurements of the fault tests (docs/RELIABILITY.md,
// "Availability"): after each heal, how long until produce and consume
// succeed again, and, when a fault deposed a leader, how long it kept
// appending records it never acknowledged (the zombie window).

// probeHeader is the record header carrying a record's send sequence.
const probeHeader = "kbroker-probe"

// consumeProbe measures consume availability end to end: writers stamp
// each record with a sequence number taken when it is sent (a header),
// consumers report every record they poll (the probe is a kgo hook), and
// consume has recovered after a heal once a consumer polled a record sent
// after it. A record polled proves the whole path: it was written,
// replicated up to the high watermark (or committed, read_committed) and
// fetched.
//
// Invariant: read is the highest sequence polled; sequences are taken in
// send order, so read > mark means a record sent after mark was polled.
type consumeProbe struct {
	sent, read atomic.Int64
}

// stamp gives r the next send sequence.
func (p *consumeProbe) stamp(r *kgo.Record) {
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: probeHeader, Value: strconv.AppendInt(nil, p.sent.Add(1), 10)})
}

// mark is the last sequence sent so far.
func (p *consumeProbe) mark() int64 { return p.sent.Load() }

// readSince reports whether a record sent after mark m was polled.
func (p *consumeProbe) readSince(m int64) bool { return p.read.Load() > m }

// OnFetchRecordUnbuffered implements kgo.HookFetchRecordUnbuffered: a
// polled record's sequence raises read.
func (p *consumeProbe) OnFetchRecordUnbuffered(r *kgo.Record, polled bool) {
	if !polled {
		return
	}
	for _, h := range r.Headers {
		if h.Key != probeHeader {
			continue
		}
		seq, err := strconv.ParseInt(string(h.Value), 10, 64)
		if err != nil {
			return
		}
		for {
			cur := p.read.Load()
			if seq <= cur || p.read.CompareAndSwap(cur, seq) {
				return
			}
		}
	}
}

// zombieSample is one look at a partition's leader of the fault's start:
// its high watermark (ListOffsets sent to it), then its log end offset
// (its /metrics), and when the look ended.
type zombieSample struct {
	at      time.Time
	leo, hw int64
}

// zombieWatch samples, while a fault is held, the log end offset and high
// watermark of every partition of a topic on the broker that led it when
// the fault began, so that once the fault is healed it can tell how long
// a deposed leader went on appending records it never acknowledged.
//
// Method: a leader acknowledges an acks=all record only once its high
// watermark passes it, so the records a leader holds above the highest
// high watermark it ever reported were never acknowledged by it. When
// another broker leads the partition after the heal, the old leader's
// appends above that mark are a zombie's: it truncates them when it
// follows the new leader. (A leader re-elected, even after leading
// elsewhere in between, is not counted: conservative, as the test
// clusters have auto.leader.rebalance.enable=false, so leadership rarely
// comes back.) The window is from the
// fault's injection to the first sample showing the zombie's last log end
// offset, an upper bound sharp to one sampling round (sampleEvery plus a
// scrape). A follower may have fetched the zombie's first such records
// just before the cut, so a few of them can survive under the new leader
// (the producer's retry is then deduplicated there); the count is of what
// the zombie appended and never acknowledged, not of what was lost.
type zombieWatch struct {
	topic    string
	start    time.Time
	leaders  map[int32]int32 // partition → leader at the start
	epochs   map[int32]int32 // partition → leader epoch at the start, for the log
	brokers  map[int32]*BrokerProc
	cl       *kgo.Client
	http     *http.Client
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	samples  map[int32][]zombieSample // partition → samples, in order
	baseline map[int32]zombieSample
}

// sampleEvery is the zombie watch's sampling period.
const sampleEvery = 100 * time.Millisecond

// startZombieWatch looks at every partition of topic (leaders and epochs
// from broker via's metadata, then one sample), and samples from then
// until stop. cl is a client that knows every broker.
func startZombieWatch(cl *kgo.Client, bs []*BrokerProc, via *BrokerProc, topic string) (*zombieWatch, error) {
	ps, err := partitionsOf(via.Addr(), topic)
	if err != nil {
		return nil, err
	}
	w := &zombieWatch{topic: topic, leaders: map[int32]int32{}, epochs: map[int32]int32{}, brokers: map[int32]*BrokerProc{},
		cl: cl, http: &http.Client{Timeout: time.Second}, stop: make(chan struct{}), done: make(chan struct{}),
		samples: map[int32][]zombieSample{}, baseline: map[int32]zombieSample{}}
	for _, b := range bs {
		w.brokers[b.ID] = b
	}
	for _, p := range ps {
		w.leaders[p.Partition] = p.Leader
		w.epochs[p.Partition] = p.LeaderEpoch
	}
	for p, s := range w.round() {
		w.baseline[p] = s
	}
	w.start = time.Now()
	go func() {
		defer close(w.done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			got := w.round()
			w.mu.Lock()
			for p, s := range got {
				w.samples[p] = append(w.samples[p], s)
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// round samples every partition once; a partition whose leader did not
// answer both questions has no sample.
func (w *zombieWatch) round() map[int32]zombieSample {
	byLeader := map[int32][]int32{}
	for p, l := range w.leaders {
		byLeader[l] = append(byLeader[l], p)
	}
	out := map[int32]zombieSample{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for l, parts := range byLeader {
		b := w.brokers[l]
		if b == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hws, err := w.highWatermarks(l, parts)
			if err != nil {
				return
			}
			leos, err := w.logEnds(b)
			if err != nil {
				return
			}
			at := time.Now() // the log end offsets were read before this
			mu.Lock()
			defer mu.Unlock()
			for _, p := range parts {
				hw, okHW := hws[p]
				leo, okLEO := leos[p]
				if okHW && okLEO {
					out[p] = zombieSample{at: at, leo: leo, hw: hw}
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// highWatermarks asks broker id itself for the latest offsets of parts
// (read_uncommitted: the high watermark); a partition it no longer leads
// is left out.
func (w *zombieWatch) highWatermarks(id int32, parts []int32) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = w.topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, w.cl.Broker(int(id)))
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out, nil
}

// logEnds scrapes b's /metrics for the log end offsets of the topic's
// partitions (kafka_log_log_logendoffset).
func (w *zombieWatch) logEnds(b *BrokerProc) (map[int32]int64, error) {
	resp, err := w.http.Get(fmt.Sprintf("http://%s/metrics", net.JoinHostPort(b.Host, strconv.Itoa(b.HTTPPort))))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("broker %d /metrics: %s", b.ID, resp.Status)
	}
	out := map[int32]int64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "kafka_log_log_logendoffset{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		var topic string
		part := int64(-1)
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "topic":
				topic = v
			case "partition":
				part, _ = strconv.ParseInt(v, 10, 32)
			}
		}
		if topic != w.topic || part < 0 {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		out[int32(part)] = int64(f)
	}
	return out, sc.Err()
}

// halt stops sampling (call it just before the heal: after it the zombie
// rejoins and truncates).
func (w *zombieWatch) halt() {
	close(w.stop)
	<-w.done
}

// zombieResult is what one fault's watch found: the partitions whose
// leader was deposed and had appended records it never acknowledged.
type zombieResult struct {
	// window is the longest time from the fault's start to a zombie's
	// last append (0: no zombie appended anything).
	window time.Duration
	// unacked counts the offsets zombies appended above the highest high
	// watermark they reported.
	unacked int64
	// lines describe each zombie partition, for the log.
	lines []string
}

// result compares the samples with the leader epochs after the heal
// (from broker via's metadata).
func (w *zombieWatch) result(via *BrokerProc) (zombieResult, error) {
	ps, err := partitionsOf(via.Addr(), w.topic)
	if err != nil {
		return zombieResult{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var r zombieResult
	for _, p := range ps {
		if p.Leader == w.leaders[p.Partition] {
			// Still (or again) the leader, keeping its log: whatever it
			// appended, it could still acknowledge.
			continue
		}
		base, ok := w.baseline[p.Partition]
		if !ok {
			continue
		}
		maxHW, lastLEO := base.hw, base.leo
		for _, s := range w.samples[p.Partition] {
			maxHW, lastLEO = max(maxHW, s.hw), max(lastLEO, s.leo)
		}
		if lastLEO <= maxHW || lastLEO <= base.leo {
			continue
		}
		var last time.Time
		for _, s := range w.samples[p.Partition] {
			if s.leo == lastLEO {
				last = s.at
				break
			}
		}
		win := last.Sub(w.start)
		r.window = max(r.window, win)
		r.unacked += lastLEO - maxHW
		r.lines = append(r.lines, fmt.Sprintf("%s/%d: broker %d (epoch %d, now %d on broker %d) appended up to offset %d, never acknowledged above %d, last append ≤%v after the fault began",
			w.topic, p.Partition, w.leaders[p.Partition], w.epochs[p.Partition], p.LeaderEpoch, p.Leader, lastLEO, maxHW, win.Round(10*time.Millisecond)))
	}
	return r, nil
}
