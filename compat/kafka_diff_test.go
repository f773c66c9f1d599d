package compat

// Differential protocol tests: the same requests, built with kmsg, sent over
// raw connections to Apache Kafka 4.4.0 (java_kafka_test.go) and to kbroker,
// both fresh; every response is compared field by field after the
// normalisations in diffNormalized, and only those. A difference there is
// kbroker answering differently from Kafka, which is the specification.
//
// Each request goes at the lowest and at the highest version that both
// brokers and kmsg know, in the same order to both brokers, so that state
// changes (a topic created by the first send) are the same on both.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// diffNormalized are the response fields whose values naturally differ
// between two brokers; they are replaced by a placeholder (when set) before
// the comparison. Nothing else is normalised.
var diffNormalized = map[string]string{
	"ThrottleMillis": "throttling depends on each broker's load and quotas",
	"ClusterID":      "random per cluster",
	"TopicID":        "random per topic",
	"ErrorMessage":   "free text; the ErrorCode next to it is compared",
	"Host":           "each broker's own listener",
	"Port":           "each broker's own listener",
	"MemberID":       "client id plus a random UUID",
	"ProducerID":     "allocated per cluster (the epoch is compared)",
	"LogAppendTime":  "wall clock",
	"Timestamp":      "wall clock",
	"StartTimestamp": "wall clock",
	"Dir":            "each broker's own log directory",
	"TotalBytes":     "each broker's own disk",
	"UsableBytes":    "each broker's own disk",
	"SessionID":      "random fetch session id",
	"UnknownTags":    "kmsg's bookkeeping of tagged fields it does not know",
}

// normalizeDiff turns a response into JSON-like values with the normalised
// fields replaced.
func normalizeDiff(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unmarshalable: %v", err)
	}
	var g any
	if err := json.Unmarshal(raw, &g); err != nil {
		return fmt.Sprintf("undecodable: %v", err)
	}
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				if _, ok := diffNormalized[k]; ok {
					x[k] = "<normalised>"
					continue
				}
				x[k] = walk(v)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
			// Configs and groups come in no specified order (Kafka
			// iterates hash maps): sort entries with a Name
			// (DescribeConfigs, CreateTopics configs) or a Group
			// (DeleteGroups, DescribeGroups) by it.
			sort.SliceStable(x, func(i, j int) bool {
				return diffSortKey(x[i]) < diffSortKey(x[j])
			})
		}
		return x
	}
	return walk(g)
}

// diffSortKey is the Name or Group of an array entry, "" for others.
func diffSortKey(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"Name", "Group"} {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}

// diffFields lists the paths where a and b differ.
func diffFields(path string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: Kafka %v, kbroker %v", path, a, b))
			return
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			diffFields(path+"."+k, av[k], bv[k], out)
		}
	case []any:
		bv, ok := b.([]any)
		if ka, kb := namedEntries(av), namedEntries(bv); ok && ka != nil && kb != nil {
			// Configs: compared by name, so that one config more or
			// less is one line, not the whole list.
			names := map[string]bool{}
			for n := range ka {
				names[n] = true
			}
			for n := range kb {
				names[n] = true
			}
			sorted := make([]string, 0, len(names))
			for n := range names {
				sorted = append(sorted, n)
			}
			sort.Strings(sorted)
			for _, n := range sorted {
				diffFields(fmt.Sprintf("%s[%s]", path, n), ka[n], kb[n], out)
			}
			return
		}
		if !ok || len(av) != len(bv) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			*out = append(*out, fmt.Sprintf("%s: Kafka %.600s, kbroker %.600s", path, ja, jb))
			return
		}
		for i := range av {
			diffFields(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, fmt.Sprintf("%s: Kafka %v, kbroker %v", path, a, b))
		}
	}
}

// namedEntries indexes a list of config entries (objects with a Name and
// a Source, as DescribeConfigs and CreateTopics answer them) by name; nil
// for any other list, or one with a name twice.
func namedEntries(l []any) map[string]any {
	if len(l) == 0 {
		return nil
	}
	m := map[string]any{}
	for _, e := range l {
		o, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		name, ok := o["Name"].(string)
		if _, hasSource := o["Source"]; !ok || !hasSource {
			return nil
		}
		if _, dup := m[name]; dup {
			return nil
		}
		m[name] = o
	}
	return m
}

// diffConn is one raw connection with the broker's advertised versions.
type diffConn struct {
	addr     string
	conn     net.Conn
	rd       *bufio.Reader
	corr     int32
	versions map[int16][2]int16
	topicIDs map[string][16]byte
	// pids are the producer ids and epochs InitProducerID answered, by
	// transactional id ("" for an idempotent producer), oldest first.
	pids map[string][][2]int64
}

func dialDiff(t *testing.T, addr string) *diffConn {
	c := &diffConn{addr: addr, conn: rawDial(t, addr), topicIDs: map[string][16]byte{}, pids: map[string][][2]int64{}}
	c.rd = bufio.NewReader(c.conn)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kbroker-compat", "1"
	resp := c.send(t, req).(*kmsg.ApiVersionsResponse)
	c.versions = map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		c.versions[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return c
}

// send writes req and reads its answer. A broker that does not answer
// within 15 s fails the test, and the connection is replaced so that the
// next request starts clean.
func (c *diffConn) send(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	c.corr++
	if err := c.conn.SetDeadline(time.Now().Add(15 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.conn.Write(appendKmsg(nil, req, c.corr)); err != nil {
		c.redial(t)
		t.Fatalf("writing %T: %v", req, err)
	}
	if _, err := c.rd.Peek(4); err != nil {
		c.redial(t)
		t.Fatalf("%s v%d to %s: no answer: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), c.addr, err)
	}
	corr, body := readFrame(t, c.rd)
	if corr != c.corr {
		t.Fatalf("correlation id %d, want %d", corr, c.corr)
	}
	return decodeResponse(t, req, body)
}

// settlingCodes are the errors a broker answers while a coordinator or the
// producer id manager is still loading: COORDINATOR_LOAD_IN_PROGRESS (14),
// COORDINATOR_NOT_AVAILABLE (15) and NOT_COORDINATOR (16). Kafka answers
// them for a moment after it creates __consumer_offsets or
// __transaction_state; a client retries, and so does sendSettled. So are
// LEADER_NOT_AVAILABLE (5) and NOT_LEADER_OR_FOLLOWER (6): Kafka answers
// them to a Produce that arrives before the partition it just created has
// become leader on the broker (seen in CI, stop 18), and a client retries
// them. A difference that persists still shows after the deadline.
var settlingCodes = map[float64]bool{5: true, 6: true, 14: true, 15: true, 16: true}

// sendSettled sends req until no ErrorCode in the answer is a settling
// code, for at most 20 s; it returns the last answer.
func (c *diffConn) sendSettled(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := c.send(t, req)
		if !hasErrorCode(normalizeDiff(resp), settlingCodes) || time.Now().After(deadline) {
			return resp
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hasErrorCode reports whether any ErrorCode field in v is in codes.
func hasErrorCode(v any, codes map[float64]bool) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, f := range x {
			if n, ok := f.(float64); ok && strings.HasSuffix(k, "ErrorCode") && codes[n] {
				return true
			}
			if hasErrorCode(f, codes) {
				return true
			}
		}
	case []any:
		for _, f := range x {
			if hasErrorCode(f, codes) {
				return true
			}
		}
	}
	return false
}

// redial replaces the connection.
func (c *diffConn) redial(t *testing.T) {
	_ = c.conn.Close()
	conn, err := net.DialTimeout("tcp", c.addr, rawTimeout)
	if err != nil {
		t.Fatalf("redialing %s: %v", c.addr, err)
	}
	c.conn, c.rd = conn, bufio.NewReader(conn)
}

// startDiffPair starts a fresh kbroker and a fresh Apache Kafka.
func startDiffPair(t *testing.T) (kb, kf *diffConn) {
	ensureJava(t)
	b := startBroker(t, t.TempDir(), matrixOverrides...)
	k := startKafka(t)
	return dialDiff(t, b.Addr()), dialDiff(t, k.Addr())
}

// TestKafkaDiffApiVersions compares the ApiVersions table: every API Kafka
// 4.4.0's broker listener advertises, with its version range, must be
// kbroker's too, and kbroker must advertise nothing Kafka does not.
func TestKafkaDiffApiVersions(t *testing.T) {
	kb, kf := startDiffPair(t)
	keys := map[int16]bool{}
	for k := range kb.versions {
		keys[k] = true
	}
	for k := range kf.versions {
		keys[k] = true
	}
	sorted := make([]int, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, int(k))
	}
	sort.Ints(sorted)
	var diffs []string
	for _, k := range sorted {
		key := int16(k)
		name := kmsg.NameForKey(key)
		b, inB := kb.versions[key]
		f, inF := kf.versions[key]
		switch {
		case !inB:
			diffs = append(diffs, fmt.Sprintf("%s(%d): Kafka v%d-%d, kbroker does not advertise it", name, key, f[0], f[1]))
		case !inF:
			diffs = append(diffs, fmt.Sprintf("%s(%d): kbroker v%d-%d, Kafka's broker listener does not advertise it", name, key, b[0], b[1]))
		case b != f:
			diffs = append(diffs, fmt.Sprintf("%s(%d): Kafka v%d-%d, kbroker v%d-%d", name, key, f[0], f[1], b[0], b[1]))
		}
	}
	var unexplained []string
	seen := map[string]bool{}
	for _, d := range diffs {
		if _, ok := apiVersionsExplained[d]; ok {
			seen[d] = true
			continue
		}
		unexplained = append(unexplained, d)
	}
	if len(unexplained) > 0 {
		t.Errorf("%d differences in the ApiVersions table that apiVersionsExplained does not explain:\n%s", len(unexplained), strings.Join(unexplained, "\n"))
	}
	for d := range apiVersionsExplained {
		if !seen[d] {
			t.Errorf("apiVersionsExplained explains a difference that is gone; remove it: %s", d)
		}
	}
}

// diffStep builds one request of the corpus; c is the connection it goes to
// (for per-broker values such as topic ids).
type diffStep struct {
	name  string
	build func(c *diffConn) kmsg.Request
	// minVersion and maxVersion bound the versions sent (0: no bound):
	// older versions may mean something else (Metadata v0-3 always
	// auto-create), newer ones may be for brokers only.
	minVersion, maxVersion int16
}

// TestKafkaDiffCorpus sends the corpus (kafka_diff_corpus_test.go) to both
// brokers and compares every response.
func TestKafkaDiffCorpus(t *testing.T) {
	kb, kf := startDiffPair(t)
	explained := corpusExplainedIndex()
	used := map[string]bool{}
	defer func() {
		var stale []string
		for k := range explained {
			if !used[k] {
				stale = append(stale, k)
			}
		}
		sort.Strings(stale)
		if len(stale) > 0 && !t.Failed() {
			t.Errorf("corpusExplained explains %d differences that are gone; remove them:\n%s", len(stale), strings.Join(stale, "\n"))
		}
	}()
	covered := map[int16]bool{kmsg.ApiVersions.Int16(): true} // dialDiff and TestKafkaDiffApiVersions
	defer func() {
		var missing []string
		for key := range kb.versions {
			if !covered[key] {
				missing = append(missing, kmsg.NameForKey(key))
			}
		}
		sort.Strings(missing)
		t.Logf("the corpus covers %d of the %d API keys kbroker advertises; not yet: %s",
			len(kb.versions)-len(missing), len(kb.versions), strings.Join(missing, ", "))
	}()
	for _, st := range diffCorpus() {
		probe := st.build(kb)
		key := probe.Key()
		covered[key] = true
		vb, okB := kb.versions[key]
		vf, okF := kf.versions[key]
		if !okB || !okF {
			t.Errorf("%s: %s is advertised by kbroker %v, by Kafka %v", st.name, kmsg.NameForKey(key), okB, okF)
			continue
		}
		lo := max(vb[0], vf[0])
		hi := min(vb[1], vf[1], probe.MaxVersion())
		lo = max(lo, st.minVersion)
		if st.maxVersion > 0 {
			hi = min(hi, st.maxVersion)
		}
		versions := []int16{lo}
		if hi != lo {
			versions = append(versions, hi)
		}
		if lo > hi {
			t.Errorf("%s: no common version of %s: kbroker %v, Kafka %v", st.name, kmsg.NameForKey(key), vb, vf)
			continue
		}
		for _, v := range versions {
			t.Run(fmt.Sprintf("%s/v%d", st.name, v), func(t *testing.T) {
				rf := st.build(kf)
				rf.SetVersion(v)
				rb := st.build(kb)
				rb.SetVersion(v)
				respF := kf.sendSettled(t, rf)
				respB := kb.sendSettled(t, rb)
				noteState(kf, rf, respF)
				noteState(kb, rb, respB)
				if os.Getenv("KBROKER_DIFF_DUMP") != "" {
					jf, _ := json.Marshal(normalizeDiff(respF))
					jb, _ := json.Marshal(normalizeDiff(respB))
					t.Logf("Kafka:   %s\nkbroker: %s", jf, jb)
				}
				var all, diffs []string
				diffFields("", normalizeDiff(respF), normalizeDiff(respB), &all)
				for _, d := range all {
					k := fmt.Sprintf("%s/v%d %s", st.name, v, d)
					if _, ok := explained[k]; ok {
						used[k] = true
						continue
					}
					diffs = append(diffs, d)
				}
				if len(diffs) > 0 {
					t.Errorf("%s v%d: %d fields differ from Apache Kafka's answer:\n%s", kmsg.NameForKey(key), v, len(diffs), strings.Join(diffs, "\n"))
				}
			})
		}
	}
}

// noteState remembers what later requests need from an answer: the topic
// ids a Metadata or CreateTopics response names (for requests that address
// topics by id) and the producer ids InitProducerID hands out.
func noteState(c *diffConn, req kmsg.Request, resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.InitProducerIDResponse:
		if r.ErrorCode == 0 {
			id := ""
			if q := req.(*kmsg.InitProducerIDRequest); q.TransactionalID != nil {
				id = *q.TransactionalID
			}
			c.pids[id] = append(c.pids[id], [2]int64{r.ProducerID, int64(r.ProducerEpoch)})
		}
	case *kmsg.MetadataResponse:
		for _, tp := range r.Topics {
			if tp.Topic != nil && tp.TopicID != [16]byte{} {
				c.topicIDs[*tp.Topic] = tp.TopicID
			}
		}
	case *kmsg.CreateTopicsResponse:
		for _, tp := range r.Topics {
			if tp.TopicID != [16]byte{} {
				c.topicIDs[tp.Topic] = tp.TopicID
			}
		}
	}
}
