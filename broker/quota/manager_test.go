package quota

import (
	"math"
	"testing"
)

func TestRateWindows(t *testing.T) {
	r := newRate(11, 1000)
	// A new rate divides by at least samples-1 windows.
	r.record(10_000, 0)
	if got := r.measure(0); got != 1000 {
		t.Fatalf("rate at 0 = %v, want 1000 (10000 B over the 10 s minimum)", got)
	}
	// 12 s later the first sample is obsolete and reset.
	r.record(500, 12_000)
	if got := r.measure(12_000); got != 50 {
		t.Fatalf("rate at 12s = %v, want 50", got)
	}
	// Samples span more than the minimum: divide by the real span.
	r2 := newRate(3, 1000)
	for ms := int64(0); ms <= 2500; ms += 500 {
		r2.record(100, ms)
	}
	// Samples start at 0, 1000, 2000 (the records at 0,500 | 1000,1500 | 2000,2500).
	if ws := r2.windowSize(2500); ws != 2500 {
		t.Fatalf("window size = %d, want 2500", ws)
	}
	if got := r2.measure(2500); math.Abs(got-240) > 1e-9 {
		t.Fatalf("rate = %v, want 600/2.5 = 240", got)
	}
}

func TestThrottleTime(t *testing.T) {
	m := NewManager(DefaultConfig)
	m.Alter(Entity{Client: Named("app")}, ProducerByteRate, 1000, false)
	// 20000 B at once: rate 2000 B/s over the 10 s minimum window, twice
	// the quota: (2000-1000)/1000 × 10000 ms.
	if got := m.Record(Produce, "ANONYMOUS", "app", 20_000, 0); got != 10_000 {
		t.Fatalf("throttle = %d ms, want 10000", got)
	}
	// Within the quota: no throttle; another client is not measured.
	m2 := NewManager(DefaultConfig)
	m2.Alter(Entity{Client: Named("app")}, ProducerByteRate, 1000, false)
	if got := m2.Record(Produce, "ANONYMOUS", "app", 10_000, 0); got != 0 {
		t.Fatalf("throttle at the quota = %d, want 0", got)
	}
	if got := m2.Record(Produce, "ANONYMOUS", "other", 1e9, 0); got != 0 {
		t.Fatalf("unquoted client throttled %d ms", got)
	}
	// Unrecord takes the bytes back.
	m2.Record(Produce, "ANONYMOUS", "app", 5000, 10)
	m2.Unrecord(Produce, "ANONYMOUS", "app", 5000, 10)
	if m2.Pending(Produce, "ANONYMOUS", "app", 10) != 0 {
		t.Fatal("exceeded after unrecord")
	}
}

// TestThrottledClientGetsItsQuota drives a client that sends 64 KiB
// batches as fast as it is let, waiting out each throttle, for a minute
// of fake time: it gets its quota, within a few percent.
func TestThrottledClientGetsItsQuota(t *testing.T) {
	for _, quota := range []float64{100_000, 1 << 20, 10 << 20} {
		m := NewManager(DefaultConfig)
		m.Alter(Entity{User: Named("alice")}, ProducerByteRate, quota, false)
		var now, sent int64
		const batch = 64 << 10
		for now < 120_000 {
			th := m.Record(Produce, "alice", "any", batch, now)
			sent += batch
			now += 1 + th // 1 ms per request, then the throttle
		}
		got := float64(sent) / (float64(now) / 1000)
		if got < quota*0.9 || got > quota*1.15 {
			t.Errorf("quota %v B/s: got %v B/s", quota, got)
		}
	}
}

func TestPrecedence(t *testing.T) {
	U, C, D, N := Named("alice"), Named("app"), DefaultPart, Part{}
	levels := []Entity{
		{U, C}, {U, D}, {U, N}, {D, C}, {D, D}, {D, N}, {N, C}, {N, D},
	}
	wantTags := []tags{
		{Produce, "alice", "app"}, {Produce, "alice", "app"}, {Produce, "alice", ""},
		{Produce, "alice", "app"}, {Produce, "alice", "app"}, {Produce, "alice", ""},
		{Produce, "", "app"}, {Produce, "", "app"},
	}
	// With levels i.. set, level i wins.
	for i := range levels {
		m := NewManager(DefaultConfig)
		for j := i; j < len(levels); j++ {
			m.Alter(levels[j], ProducerByteRate, float64(100+j), false)
		}
		// Another kind at a higher level changes nothing.
		if i > 0 {
			m.Alter(levels[0], ConsumerByteRate, 1, false)
		}
		bound, tg, ok := m.Resolve(Produce, "alice", "app")
		if !ok || bound != float64(100+i) || tg != wantTags[i] {
			t.Errorf("level %d (%s): got %v %+v %v, want %d %+v", i+1, levels[i], bound, tg, ok, 100+i, wantTags[i])
		}
	}
	// Another user and client: only the defaults apply.
	m := NewManager(DefaultConfig)
	m.Alter(Entity{U, C}, ProducerByteRate, 1, false)
	if _, _, ok := m.Resolve(Produce, "bob", "app"); ok {
		t.Error("alice's quota applied to bob")
	}
	m.Alter(Entity{D, N}, ProducerByteRate, 7, false)
	if b, tg, _ := m.Resolve(Produce, "bob", "x"); b != 7 || tg.user != "bob" || tg.client != "" {
		t.Errorf("default user quota: %v %+v", b, tg)
	}
	m.Alter(Entity{D, N}, ProducerByteRate, 0, true)
	if m.Enabled(Produce) != true || m.Enabled(Fetch) {
		t.Error("enabled kinds wrong")
	}
}

func TestEntityPaths(t *testing.T) {
	for _, c := range []struct {
		e    Entity
		path string
	}{
		{Entity{User: Named("alice")}, "users/alice"},
		{Entity{User: DefaultPart}, "users/<default>"},
		{Entity{Client: Named("my app*")}, "clients/my%20app%2A"},
		{Entity{User: Named("CN=a,O=b"), Client: DefaultPart}, "users/CN%3Da%2CO%3Db/clients/<default>"},
	} {
		if got := c.e.Path(); got != c.path {
			t.Errorf("%s: path %q, want %q", c.e, got, c.path)
		}
		back, err := ParsePath(c.path)
		if err != nil || back != c.e {
			t.Errorf("ParsePath(%q) = %+v, %v", c.path, back, err)
		}
	}
	for _, bad := range []string{"", "users", "topics/x", "users/a/clients", "users/%zz"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	name := "x"
	for _, c := range []struct {
		comps []Component
		err   string
	}{
		{nil, "Invalid empty client quota entity"},
		{[]Component{{Type: "topic", Name: &name}}, "Unhandled client quota entity type: topic"},
		{[]Component{{Type: TypeUser}, {Type: TypeUser, Name: &name}}, "Duplicate user entity"},
		{[]Component{{Type: TypeUser}, {Type: TypeClientID, Name: &name}}, ""},
	} {
		_, err := EntityOf(c.comps)
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%+v: %v, want %q", c.comps, err, c.err)
		}
	}
	for _, c := range []struct {
		key string
		v   float64
		err string
	}{
		{ProducerByteRate, 1024, ""},
		{ProducerByteRate, 10.5, "producer_byte_rate cannot be a fractional value."},
		{ConsumerByteRate, 0, "Quota consumer_byte_rate must be greater than 0"},
		{RequestPercentage, 12.5, ""},
		{ControllerMutationRate, -1, "Quota controller_mutation_rate must be greater than 0"},
		{"bogus", 1, "Invalid configuration key bogus"},
	} {
		err := ValidateValue(c.key, c.v)
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%s=%v: %v, want %q", c.key, c.v, err, c.err)
		}
	}
}

func TestFilter(t *testing.T) {
	s := func(v string) *string { return &v }
	U, D, N := Named("alice"), DefaultPart, Part{}
	all := map[Entity]map[string]float64{
		{U, N}:          {ProducerByteRate: 1},
		{D, N}:          {ProducerByteRate: 2},
		{U, Named("a")}: {ProducerByteRate: 3},
		{N, Named("a")}: {ProducerByteRate: 4},
		{N, D}:          {ProducerByteRate: 5},
	}
	for _, c := range []struct {
		comps  []FilterComponent
		strict bool
		want   []string
	}{
		{nil, false, []string{"clients/<default>", "clients/a", "users/<default>", "users/alice", "users/alice/clients/a"}},
		{nil, true, nil},
		{[]FilterComponent{{Type: TypeUser, MatchType: MatchSpecified}}, true, []string{"users/<default>", "users/alice"}},
		{[]FilterComponent{{Type: TypeUser, MatchType: MatchExact, Match: s("alice")}}, false, []string{"users/alice", "users/alice/clients/a"}},
		{[]FilterComponent{{Type: TypeUser, MatchType: MatchDefault}}, false, []string{"users/<default>"}},
		{[]FilterComponent{{Type: TypeClientID, MatchType: MatchSpecified}}, true, []string{"clients/<default>", "clients/a"}},
		{[]FilterComponent{{Type: TypeClientID, MatchType: MatchExact, Match: s("a")}, {Type: TypeUser, MatchType: MatchSpecified}}, true, []string{"users/alice/clients/a"}},
	} {
		f, err := NewFilter(c.comps, c.strict)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range Describe(all, f) {
			got = append(got, d.Entity.Path())
		}
		if fmtList(got) != fmtList(c.want) {
			t.Errorf("%+v strict=%v: %v, want %v", c.comps, c.strict, got, c.want)
		}
	}
	for _, bad := range [][]FilterComponent{
		{{Type: TypeUser, MatchType: MatchExact}},
		{{Type: TypeUser, MatchType: MatchDefault, Match: s("x")}},
		{{Type: TypeUser, MatchType: 7}},
		{{Type: TypeUser, MatchType: 2}, {Type: TypeUser, MatchType: 2}},
		{{Type: "topic", MatchType: 2}},
	} {
		if _, err := NewFilter(bad, false); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func fmtList(l []string) string {
	out := ""
	for _, s := range l {
		out += s + ";"
	}
	return out
}
