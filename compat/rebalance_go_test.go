package compat

// Consumer groups under churn, for every client: two or three members of one
// group join and leave (cleanly, with LeaveGroup) while a producer keeps
// writing, and the broker is killed with SIGKILL and restarted in the middle.
// Every acknowledged record must be consumed, and no record whose offset a
// member committed (it printed or recorded the commit after the commit call
// succeeded) may be delivered again: a delivery of partition p, offset o is a
// violation once any successful commit for p reached beyond o. Records
// delivered but not committed may be delivered again.
//
// The scenario (runRebalance):
//
//  1. a producer writes 10 keyed records every 100 ms until step 8;
//  2. members m1 and m2 join; both consume (and commit);
//  3. m3 joins and consumes;
//  4. m1 leaves;
//  5. the broker is killed (SIGKILL) and restarted; m2 and m3 consume
//     (and commit) again;
//  6. m4 joins and consumes;
//  7. m2 leaves;
//  8. the producer stops; once every record was consumed, m3 and m4 leave.
//
// The Go clients run in this file; kcat, kafka-python and kafkajs run as
// processes (rebalance_proc_test.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	segkafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rbPartitions is the partition count of each scenario topic.
const rbPartitions = 4

// rbStepTimeout bounds each wait of the scenario.
const rbStepTimeout = 30 * time.Second

// rbOverrides: groups form at once; KIP-848 members heartbeat every 500 ms
// (so assignment changes travel fast) with the minimum 6 s session.
var rbOverrides = []string{
	"group.initial.rebalance.delay.ms=0",
	"group.consumer.heartbeat.interval.ms=500",
	"group.consumer.session.timeout.ms=6000",
}

// rbLog collects what members report: deliveries and successful commits,
// in the order the test learns of them, and checks each delivery against
// the commits seen before it.
type rbLog struct {
	mu         sync.Mutex
	acked      map[string]bool     // keys the producer got acknowledged
	ackedAt    map[string]string   // key -> where it was written
	ackedPos   map[string][2]int64 // key -> partition, offset
	delivered  map[string]int      // key -> deliveries
	byMember   map[string]int      // member -> deliveries
	commitsBy  map[string]int      // member -> commit reports
	water      map[int32]int64     // partition -> highest committed next offset
	waterBy    map[int32]string    // partition -> who committed it
	total      int
	commits    int
	violations []string
	problems   []string   // unparseable output and the like
	events     []rbEvent  // everything, for the failure report
	bad        [][2]int64 // partition and offset of each violation
	start      time.Time
}

// rbEvent is one report, kept to explain a failure.
type rbEvent struct {
	at     time.Duration
	member string
	what   string // "delivered", "committed" or a scenario step
	p      int32
	o      int64
}

func (e rbEvent) String() string {
	if e.what != "delivered" && e.what != "committed" {
		return fmt.Sprintf("%8v  --- %s", e.at.Round(time.Millisecond), e.what)
	}
	return fmt.Sprintf("%8v  %-6s %-9s p%d o%d", e.at.Round(time.Millisecond), e.member, e.what, e.p, e.o)
}

// step records a scenario step in the event log.
func (l *rbLog) step(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, rbEvent{at: time.Since(l.start), what: what, p: -1})
}

// history is the events of partition p (and the steps) around offset o.
func (l *rbLog) history(p int32, o int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.events {
		if e.p == -1 || (e.p == p && e.o >= o-3 && e.o <= o+3) {
			fmt.Fprintf(&b, "\n%v", e)
		}
	}
	return b.String()
}

func newRBLog() *rbLog {
	return &rbLog{acked: map[string]bool{}, ackedAt: map[string]string{}, ackedPos: map[string][2]int64{}, delivered: map[string]int{}, byMember: map[string]int{},
		commitsBy: map[string]int{}, water: map[int32]int64{}, waterBy: map[int32]string{}, start: time.Now()}
}

// deliver records that member got the record key at p/o.
func (l *rbLog) deliver(member string, p int32, o int64, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.water[p]; ok && o < w && len(l.violations) < 20 {
		l.violations = append(l.violations, fmt.Sprintf("%s got partition %d offset %d (key %s) after %s committed partition %d up to offset %d",
			member, p, o, key, l.waterBy[p], p, w))
		l.bad = append(l.bad, [2]int64{int64(p), o})
	}
	l.events = append(l.events, rbEvent{at: time.Since(l.start), member: member, what: "delivered", p: p, o: o})
	l.delivered[key]++
	l.byMember[member]++
	l.total++
}

// commit records that member's commit of next (the offset after the last
// processed record) for partition p succeeded.
func (l *rbLog) commit(member string, p int32, next int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.water[p]; !ok || next > w {
		l.water[p], l.waterBy[p] = next, member
	}
	l.commitsBy[member]++
	l.commits++
	l.events = append(l.events, rbEvent{at: time.Since(l.start), member: member, what: "committed", p: p, o: next})
}

func (l *rbLog) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.problems) < 20 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

func (l *rbLog) ack(rs []*kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		l.acked[string(r.Key)] = true
		l.ackedAt[string(r.Key)] = fmt.Sprintf("%s at partition %d offset %d", r.Key, r.Partition, r.Offset)
		l.ackedPos[string(r.Key)] = [2]int64{int64(r.Partition), r.Offset}
	}
}

// where is where the producer was told keys were written.
func (l *rbLog) where(keys []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = l.ackedAt[k]
	}
	return out
}

// waitUntil polls cond every 50ms until it holds (true) or timeout passes.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// rbCount is a snapshot of the counters.
type rbCount struct {
	total, commits      int
	byMember, commitsBy map[string]int
}

func (l *rbLog) count() rbCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := rbCount{total: l.total, commits: l.commits, byMember: map[string]int{}, commitsBy: map[string]int{}}
	for k, v := range l.byMember {
		c.byMember[k] = v
	}
	for k, v := range l.commitsBy {
		c.commitsBy[k] = v
	}
	return c
}

// missing is the acknowledged keys never delivered.
func (l *rbLog) missing() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k := range l.acked {
		if l.delivered[k] == 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (l *rbLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	redelivered := 0
	for _, n := range l.delivered {
		if n > 1 {
			redelivered++
		}
	}
	return fmt.Sprintf("acked %d, delivered %d (%d keys, %d more than once), commits %d, by member %v, commits by member %v, committed offsets %v",
		len(l.acked), l.total, len(l.delivered), redelivered, l.commits, l.byMember, l.commitsBy, l.water)
}

// rbEnv is what a member needs.
type rbEnv struct {
	addr, topic, group string
	log                *rbLog
	adm                *kadm.Client
}

// observe reads the group's committed offsets from the broker and records
// them as commits by "broker": used for clients whose commits cannot be
// observed (kcat's auto-commit; sarama's Commit returns nothing). What the
// broker answered is committed; a later delivery below it is reprocessing.
func (e *rbEnv) observe(ctx context.Context) (map[int32]int64, error) {
	offs, err := e.adm.FetchOffsets(ctx, e.group)
	if err != nil {
		return nil, err
	}
	if err := offs.Error(); err != nil {
		return nil, err
	}
	seen := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == e.topic && o.Err == nil && o.At >= 0 {
			e.log.commit("broker", o.Partition, o.At)
			seen[o.Partition] = o.At
		}
	})
	return seen, nil
}

// rbMember is one running group member.
type rbMember interface {
	// leave makes the member leave the group cleanly and waits until it
	// has; it fails t if the client reported an error doing so.
	leave(t *testing.T)
}

// rbCase configures runRebalance for one client.
type rbCase struct {
	client, version string
	caps            []string // capabilities recorded (results_test.go)
	groupType       string   // "classic" or "consumer" (KIP-848), checked with ListGroups
	// noCommitReports: the client's commits cannot be seen; the broker's
	// committed offsets are read after each member left instead.
	noCommitReports bool
	start           func(t *testing.T, env *rbEnv, name string) rbMember
	// dropsAtExit: a member told to leave may skip the record it had just
	// polled yet commit past it (kcat, see TestRebalanceKcat). A record no
	// member consumed is then accepted if the committed offsets read right
	// after a member left were just past it, one record per leave.
	dropsAtExit bool
	// redelivers explains why the client itself delivers committed
	// records again around a rebalance; its violations are then logged,
	// not failures (only kafka-go, see TestRebalanceKafkaGo).
	redelivers string
}

// runRebalance runs the scenario at the top of this file for one client.
func runRebalance(t *testing.T, c rbCase) {
	if c.client != "" {
		recordCap(t, c.client, c.version, c.caps...)
	}
	began := time.Now()
	b := startBroker(t, t.TempDir(), rbOverrides...)
	adm := newAdmin(t, b.Addr())
	base := strings.NewReplacer("/", "-", " ", "-", "(", "", ")", "", ",", "").Replace(strings.ToLower(t.Name()))
	env := &rbEnv{addr: b.Addr(), topic: base, group: base + "-group", log: newRBLog(), adm: adm}
	createTopic(t, adm, env.topic, rbPartitions, nil)
	l := env.log
	defer func() {
		if t.Failed() {
			l.mu.Lock()
			problems := l.problems
			l.mu.Unlock()
			t.Logf("rebalance log: %s; client output problems: %q", l.summary(), problems)
		}
	}()
	wait := func(what string, cond func(rbCount) bool) {
		t.Helper()
		waitFor(t, rbStepTimeout, what+" ("+l.summary()+")", func() bool { return cond(l.count()) })
	}
	// consumed: member has n more deliveries than at the snapshot from.
	consumed := func(from rbCount, n int, members ...string) func(rbCount) bool {
		return func(c rbCount) bool {
			for _, m := range members {
				if c.byMember[m]-from.byMember[m] < n {
					return false
				}
			}
			return true
		}
	}
	var atLeave []map[int32]int64 // committed offsets read after each leave
	leave := func(m rbMember, name string) {
		t.Helper()
		m.leave(t)
		if c.noCommitReports {
			seen, err := env.observe(testCtx(t))
			if err != nil {
				t.Fatalf("fetching committed offsets after %s left: %v", name, err)
			}
			atLeave = append(atLeave, seen)
		}
	}
	// unexplained is the missing records that dropsAtExit does not excuse.
	unexplained := func(report bool) []string {
		miss := l.missing()
		if !c.dropsAtExit {
			return miss
		}
		used := make([]bool, len(atLeave))
		var out []string
		for _, k := range miss {
			l.mu.Lock()
			pos := l.ackedPos[k]
			l.mu.Unlock()
			excused := false
			for i, seen := range atLeave {
				if at, ok := seen[int32(pos[0])]; ok && !used[i] && at == pos[1]+1 {
					used[i], excused = true, true
					if report {
						t.Logf("%s: never printed, committed when a member left (kcat drops the record it polled when told to stop)", l.where([]string{k})[0])
					}
					break
				}
			}
			if !excused {
				out = append(out, k)
			}
		}
		return out
	}

	stopProducer := rbProduce(t, env)
	defer stopProducer()

	// 2. Two members.
	l.step("m1, m2 join")
	m1 := c.start(t, env, "m1")
	m2 := c.start(t, env, "m2")
	wait("m1 and m2 consuming", func(n rbCount) bool {
		return consumed(rbCount{}, 1, "m1", "m2")(n) && (c.noCommitReports || n.commits > 0)
	})
	checkGroupType(t, adm, env.group, c.groupType)

	// 3. A third joins.
	l.step("m3 joins")
	m3 := c.start(t, env, "m3")
	wait("m3 consuming", consumed(rbCount{}, 1, "m3"))

	// 4. One leaves.
	l.step("m1 leaves")
	leave(m1, "m1")
	l.step("m1 left")
	snap := l.count()
	wait("m2 and m3 consuming after m1 left", consumed(snap, 1, "m2", "m3"))

	// 5. The broker dies and comes back with m2 and m3 still running.
	t.Logf("%v: killing the broker (%s)", time.Since(began).Round(time.Millisecond), l.summary())
	l.step("broker killed")
	b.KillAndRestart()
	l.step("broker restarted")
	snap = l.count()
	wait("m2 and m3 consuming after the restart", func(n rbCount) bool {
		return consumed(snap, 1, "m2", "m3")(n) && (c.noCommitReports || n.commits > snap.commits)
	})
	t.Logf("%v: consuming again after the restart", time.Since(began).Round(time.Millisecond))

	// 6. A member that joins after the restart.
	l.step("m4 joins")
	m4 := c.start(t, env, "m4")
	wait("m4 consuming", consumed(rbCount{}, 1, "m4"))

	// 7. Another leaves.
	l.step("m2 leaves")
	leave(m2, "m2")
	l.step("m2 left")
	snap = l.count()
	wait("m3 and m4 consuming after m2 left", consumed(snap, 1, "m3", "m4"))

	// 8. Everything produced gets consumed; the last members leave.
	stopProducer()
	if !waitUntil(rbStepTimeout, func() bool { return len(unexplained(false)) == 0 }) {
		miss := unexplained(false)
		t.Fatalf("%d acknowledged records not consumed %v after the producer stopped, e.g. %v", len(miss), rbStepTimeout, l.where(miss[:min(5, len(miss))]))
	}
	l.step("m3, m4 leave")
	leave(m3, "m3")
	leave(m4, "m4")
	b.Alive()

	l.mu.Lock()
	violations, problems, bad := l.violations, l.problems, l.bad
	l.mu.Unlock()
	for _, p := range problems {
		t.Errorf("client output: %s", p)
	}
	for i, v := range violations {
		if c.redelivers != "" {
			t.Logf("reprocessed after a commit (%s): %s", c.redelivers, v)
		} else {
			t.Errorf("reprocessed after a commit: %s", v)
		}
		if i < 3 {
			t.Logf("events of partition %d near offset %d, and the scenario steps:%s", bad[i][0], bad[i][1], l.history(int32(bad[i][0]), bad[i][1]))
		}
	}
	if miss := unexplained(true); len(miss) > 0 {
		t.Errorf("%d acknowledged records never consumed, e.g. %v", len(miss), miss[:min(5, len(miss))])
	}
	t.Logf("%v: %s", time.Since(began).Round(time.Millisecond), l.summary())
}

// checkGroupType fails t unless ListGroups shows group with type want
// ("classic" or "consumer"), so a KIP-848 test cannot pass by quietly
// falling back to the classic protocol.
func checkGroupType(t *testing.T, adm *kadm.Client, group, want string) {
	t.Helper()
	if want == "" {
		return
	}
	gs, err := adm.ListGroups(testCtx(t))
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	g, ok := gs[group]
	if !ok {
		t.Fatalf("ListGroups does not list %s: %v", group, gs.Groups())
	}
	if g.GroupType != want {
		t.Fatalf("group %s has type %q, want %q", group, g.GroupType, want)
	}
}

// rbProduce starts a producer writing 10 keyed records every 100 ms,
// acknowledged with acks=all, until the returned function is called (which
// waits for the last batch). It is not idempotent: a batch written before
// the broker was killed but not acknowledged is written again, at other
// offsets, which the scenario allows (records are checked by key).
func rbProduce(t *testing.T, env *rbEnv) (stop func()) {
	cl := newKgo(t, env.addr, kgo.DefaultProduceTopic(env.topic), kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()), // kafkajs has no snappy by itself
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; {
			rs := make([]*kgo.Record, 10)
			keys := make([]string, len(rs))
			for j := range rs {
				keys[j] = fmt.Sprintf("rb-%06d", i)
				rs[j] = &kgo.Record{Key: []byte(keys[j]), Value: []byte("value-of-" + keys[j])}
				i++
			}
			pctx, pcancel := context.WithTimeout(context.Background(), opTimeout)
			err = cl.ProduceSync(pctx, rs...).FirstErr()
			pcancel()
			if err != nil {
				return
			}
			env.log.ack(rs)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			if err != nil {
				t.Errorf("producer: %v", err)
			}
		})
	}
}

// goMember runs a consume loop in a goroutine until leave.
type goMember struct {
	name   string
	cancel context.CancelFunc
	done   chan error
	close  func() error // leaves the group and closes the client
}

func (m *goMember) leave(t *testing.T) {
	t.Helper()
	m.cancel()
	select {
	case err := <-m.done:
		if err != nil {
			t.Fatalf("%s: consume loop: %v", m.name, err)
		}
	case <-time.After(rbStepTimeout):
		t.Fatalf("%s: consume loop did not end within %v", m.name, rbStepTimeout)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("%s: leaving: %v", m.name, err)
		}
	case <-time.After(rbStepTimeout):
		t.Fatalf("%s: leaving took longer than %v", m.name, rbStepTimeout)
	}
}

// ---------------------------------------------------------------- franz-go

func rbFranzVersion() string {
	return moduleVersion("github.com/twmb/franz-go") + " (kadm " + moduleVersion("github.com/twmb/franz-go/pkg/kadm") + ")"
}

func TestRebalanceFranzGoRange(t *testing.T) {
	t.Parallel()
	runRebalance(t, rbCase{client: "franz-go (kgo, kadm)", version: rbFranzVersion(), caps: []string{capGroups},
		groupType: "classic", start: franzMember(kgo.RangeBalancer(), false)})
}

func TestRebalanceFranzGoCooperativeSticky(t *testing.T) {
	t.Parallel()
	runRebalance(t, rbCase{client: "franz-go (kgo, kadm)", version: rbFranzVersion(), caps: []string{capGroups},
		groupType: "classic", start: franzMember(kgo.CooperativeStickyBalancer(), false)})
}

func TestRebalanceFranzGoKIP848(t *testing.T) {
	t.Parallel()
	runRebalance(t, rbCase{client: "franz-go (kgo, kadm)", version: rbFranzVersion(), caps: []string{capGroups, capKIP848},
		groupType: "consumer", start: franzMember(kgo.CooperativeStickyBalancer(), true)})
}

// franzMember polls up to 50 records, commits them with CommitRecords and
// only then lets a rebalance proceed (BlockRebalanceOnPoll), so it never
// commits for a partition it lost.
func franzMember(balancer kgo.GroupBalancer, k848 bool) func(t *testing.T, env *rbEnv, name string) rbMember {
	return func(t *testing.T, env *rbEnv, name string) rbMember {
		opts := []kgo.Opt{
			kgo.SeedBrokers(env.addr), kgo.ClientID("rb-" + name),
			kgo.ConsumerGroup(env.group), kgo.ConsumeTopics(env.topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(100 * time.Millisecond), kgo.Balancers(balancer), kgo.BlockRebalanceOnPoll(),
			kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		}
		if k848 {
			opts = append(opts, kgo.ServerSideBalancer())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatalf("kgo.NewClient: %v", err)
		}
		t.Cleanup(cl.Close)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		m := &goMember{name: name, cancel: cancel, done: make(chan error, 1), close: func() error {
			lctx, lcancel := context.WithTimeout(context.Background(), opTimeout)
			defer lcancel()
			err := cl.LeaveGroupContext(lctx)
			cl.Close()
			return err
		}}
		go func() {
			for {
				fs := cl.PollRecords(ctx, 50)
				if ctx.Err() != nil {
					cl.AllowRebalance()
					m.done <- nil
					return
				}
				rs := fs.Records()
				next := map[int32]int64{}
				for _, r := range rs {
					env.log.deliver(name, r.Partition, r.Offset, string(r.Key))
					next[r.Partition] = max(next[r.Partition], r.Offset+1)
				}
				if len(rs) > 0 {
					cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
					err := cl.CommitRecords(cctx, rs...)
					ccancel()
					if err == nil {
						for p, o := range next {
							env.log.commit(name, p, o)
						}
					}
				}
				cl.AllowRebalance()
			}
		}()
		return m
	}
}

// ---------------------------------------------------------------- sarama

func TestRebalanceSarama(t *testing.T) {
	t.Parallel()
	runRebalance(t, rbCase{client: "IBM/sarama", version: moduleVersion("github.com/IBM/sarama"), caps: []string{capGroups},
		groupType: "classic", start: saramaMember})
}

// saramaRBHandler marks each message and, when its claim has nothing more
// buffered, commits synchronously. Session.Commit reports no outcome, so
// the broker's committed offsets are read back after it (rbEnv.observe).
type saramaRBHandler struct {
	env  *rbEnv
	name string
}

func (h *saramaRBHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaRBHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaRBHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.env.log.deliver(h.name, m.Partition, m.Offset, string(m.Key))
			sess.MarkMessage(m, "")
			if len(claim.Messages()) == 0 {
				sess.Commit()
				octx, cancel := context.WithTimeout(sess.Context(), 2*time.Second)
				_, _ = h.env.observe(octx) // fails while the broker is down: nothing observed
				cancel()
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

func saramaMember(t *testing.T, env *rbEnv, name string) rbMember {
	cfg := saramaConfig(sarama.V3_0_0_0, sarama.CompressionNone, false)
	cfg.ClientID = "rb-" + name
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	cfg.Consumer.Retry.Backoff = 200 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{env.addr}, env.group, cfg)
	if err != nil {
		t.Fatalf("NewConsumerGroup: %v", err)
	}
	closeOnce := sync.OnceValue(cg.Close)
	t.Cleanup(func() { _ = closeOnce() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { // consumer errors (connection errors while the broker is down)
		for range cg.Errors() {
		}
	}()
	m := &goMember{name: name, cancel: cancel, done: make(chan error, 1), close: closeOnce}
	h := &saramaRBHandler{env: env, name: name}
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{env.topic}, h); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					break
				}
				// The broker is down: Consume fails; try again.
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
		m.done <- nil
	}()
	return m
}

// ---------------------------------------------------------------- kafka-go

// TestRebalanceKafkaGo: kafka-go's Reader hands out messages its previous
// generation had already queued after a rebalance (here: the members rejoin
// when their heartbeats fail while the broker is down), and commits them
// through the new generation, while the new generation's partition readers
// already fetched the committed offsets and start from there: the member
// commits offset N and is then given records below N again. The sequence
// (seen in every run) is: new generation's OffsetFetch, commit of a queued
// old-generation message (accepted, as Kafka accepts it), delivery from the
// fetched offset. Kafka behaves the same, so these redeliveries are logged,
// not failures; every record must still be consumed.
func TestRebalanceKafkaGo(t *testing.T) {
	t.Parallel()
	runRebalance(t, rbCase{client: "segmentio/kafka-go", version: moduleVersion("github.com/segmentio/kafka-go"), caps: []string{capGroups},
		groupType: "classic", start: kafkaGoMember,
		redelivers: "kafka-go delivers and commits messages queued by its previous generation"})
}

// kafkaGoMember fetches one message at a time and commits it synchronously
// (CommitInterval 0).
func kafkaGoMember(t *testing.T, env *rbEnv, name string) rbMember {
	r := segkafka.NewReader(segkafka.ReaderConfig{
		Brokers: []string{env.addr}, GroupID: env.group, Topic: env.topic,
		StartOffset: segkafka.FirstOffset, MaxWait: 100 * time.Millisecond,
		CommitInterval: 0, SessionTimeout: 6 * time.Second, RebalanceTimeout: 10 * time.Second,
		HeartbeatInterval: 500 * time.Millisecond, JoinGroupBackoff: 200 * time.Millisecond,
		ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: 200 * time.Millisecond,
		GroupBalancers: []segkafka.GroupBalancer{segkafka.RangeGroupBalancer{}},
		// KBROKER_RB_DEBUG=1 puts kafka-go's log into the failure report.
		Logger: segkafka.LoggerFunc(func(f string, a ...any) {
			if os.Getenv("KBROKER_RB_DEBUG") != "" {
				env.log.step(name + ": " + strings.ReplaceAll(fmt.Sprintf(f, a...), "\n", " "))
			}
		}),
	})
	closeOnce := sync.OnceValue(r.Close)
	t.Cleanup(func() { _ = closeOnce() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := &goMember{name: name, cancel: cancel, done: make(chan error, 1), close: closeOnce}
	go func() {
		for {
			msg, err := r.FetchMessage(ctx)
			if ctx.Err() != nil {
				m.done <- nil
				return
			}
			if err != nil {
				env.log.problem("%s: FetchMessage: %v", name, err)
				m.done <- err
				return
			}
			env.log.deliver(name, int32(msg.Partition), msg.Offset, string(msg.Key))
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			err = r.CommitMessages(cctx, msg)
			ccancel()
			if err == nil {
				env.log.commit(name, int32(msg.Partition), msg.Offset+1)
			}
		}
	}()
	return m
}

// ---------------------------------------------------------------- confluent-kafka-go

func confluentGoVersion() string {
	_, lib := ckafka.LibraryVersion()
	return moduleVersion("github.com/confluentinc/confluent-kafka-go/v2") + " (librdkafka " + lib + ")"
}

func TestRebalanceConfluentKafkaGo(t *testing.T) {
	t.Parallel()
	runRebalance(t, rbCase{client: "confluent-kafka-go", version: confluentGoVersion(), caps: []string{capGroups},
		groupType: "classic", start: confluentMember(false)})
}

func TestRebalanceConfluentKafkaGoKIP848(t *testing.T) {
	t.Parallel()
	runRebalance(t, rbCase{client: "confluent-kafka-go", version: confluentGoVersion(), caps: []string{capGroups, capKIP848},
		groupType: "consumer", start: confluentMember(true)})
}

// confluentMember polls and commits each message synchronously
// (CommitMessage). A rebalance callback makes librdkafka hand assignment
// changes to the polling goroutine, so a commit never races a revocation.
func confluentMember(k848 bool) func(t *testing.T, env *rbEnv, name string) rbMember {
	return func(t *testing.T, env *rbEnv, name string) rbMember {
		cm := ckafka.ConfigMap{
			"bootstrap.servers": env.addr, "broker.address.family": "v4", "client.id": "rb-" + name,
			"group.id": env.group, "auto.offset.reset": "earliest", "enable.auto.commit": false,
			"fetch.wait.max.ms": 100, "reconnect.backoff.ms": 100, "reconnect.backoff.max.ms": 500,
			"go.logs.channel.enable": true, "log_level": 6,
		}
		if k848 {
			// KIP-848: session, heartbeat and assignor are the broker's.
			cm["group.protocol"] = "consumer"
		} else {
			cm["session.timeout.ms"] = 6000
			cm["heartbeat.interval.ms"] = 500
			cm["partition.assignment.strategy"] = "range"
		}
		c, err := ckafka.NewConsumer(&cm)
		if err != nil {
			t.Fatalf("NewConsumer: %v", err)
		}
		flushLogs := drainLogs(t, c.Logs())
		closeOnce := sync.OnceValue(c.Close)
		t.Cleanup(func() { _ = closeOnce(); flushLogs() })
		if err := c.Subscribe(env.topic, func(*ckafka.Consumer, ckafka.Event) error { return nil }); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		m := &goMember{name: name, cancel: cancel, done: make(chan error, 1), close: closeOnce}
		go func() {
			for ctx.Err() == nil {
				msg, ok := c.Poll(100).(*ckafka.Message)
				if !ok || msg.TopicPartition.Error != nil {
					continue
				}
				p, o := msg.TopicPartition.Partition, int64(msg.TopicPartition.Offset)
				env.log.deliver(name, p, o, string(msg.Key))
				if tps, err := c.CommitMessage(msg); err == nil && len(tps) == 1 && tps[0].Error == nil {
					env.log.commit(name, p, o+1)
				}
			}
			m.done <- nil
		}()
		return m
	}
}
