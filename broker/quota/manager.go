package quota

import (
	"math"
	"sync"
	"sync/atomic"
)

// Kind is a quota type, each measured apart as Kafka's quota managers do.
type Kind int

const (
	Produce            Kind = iota // producer_byte_rate: bytes of produce requests per second
	Fetch                          // consumer_byte_rate: bytes of consumer fetch responses per second
	Request                        // request_percentage: percent of one handler's time
	ControllerMutation             // controller_mutation_rate: partitions created or deleted per second
	numKinds
)

// Key is the quota key of k.
func (k Kind) Key() string { return Keys[k] }

// Config is quota.window.num and quota.window.size.seconds (Kafka's
// defaults: 11 windows of 1 s).
type Config struct {
	Samples  int
	WindowMs int64
}

// DefaultConfig is Kafka's.
var DefaultConfig = Config{Samples: 11, WindowMs: 1000}

// sensorIdleMs is how long a sensor may go unrecorded before it is dropped
// (Kafka's quota sensors expire after an hour of inactivity), so that
// clients cycling client ids cannot grow the table without bound.
const sensorIdleMs = 3600_000

// tags identify a sensor as Kafka's quota metric tags do: the user and
// client id the matching quota level names ("" for a level without that
// part), so that every client sharing a quota shares its rate.
type tags struct {
	kind         Kind
	user, client string
}

type sensor struct {
	r    *rate
	last int64
}

// Manager holds every entity's quotas and the rates of the clients they
// apply to. It is safe for concurrent use; it reads no clock.
type Manager struct {
	cfg Config
	// any is set while some entity has a quota: without one, the handler
	// passes requests through without taking mu.
	any atomic.Bool
	mu  struct {
		sync.Mutex
		quotas map[Entity]map[string]float64
		// enabled counts the entities that set each kind: none means no
		// client of that kind is measured.
		enabled   [numKinds]int
		sensors   map[tags]*sensor
		lastSweep int64
	}
}

// NewManager returns a manager with no quotas.
func NewManager(cfg Config) *Manager {
	if cfg.Samples <= 0 {
		cfg.Samples = DefaultConfig.Samples
	}
	if cfg.WindowMs <= 0 {
		cfg.WindowMs = DefaultConfig.WindowMs
	}
	m := &Manager{cfg: cfg}
	m.mu.quotas = map[Entity]map[string]float64{}
	m.mu.sensors = map[tags]*sensor{}
	return m
}

// Set replaces every quota (at start-up, or after a change elsewhere in
// the cluster).
func (m *Manager) Set(all map[Entity]map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.quotas = map[Entity]map[string]float64{}
	for e, vals := range all {
		if len(vals) == 0 {
			continue
		}
		cp := make(map[string]float64, len(vals))
		for k, v := range vals {
			cp[k] = v
		}
		m.mu.quotas[e] = cp
	}
	m.countLocked()
}

// Alter sets (or, when remove, removes) one quota of e.
func (m *Manager) Alter(e Entity, key string, value float64, remove bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vals := m.mu.quotas[e]
	if remove {
		delete(vals, key)
		if len(vals) == 0 {
			delete(m.mu.quotas, e)
		}
	} else {
		if vals == nil {
			vals = map[string]float64{}
			m.mu.quotas[e] = vals
		}
		vals[key] = value
	}
	m.countLocked()
}

func (m *Manager) countLocked() {
	m.any.Store(len(m.mu.quotas) > 0)
	m.mu.enabled = [numKinds]int{}
	for _, vals := range m.mu.quotas {
		for k := Kind(0); k < numKinds; k++ {
			if _, ok := vals[k.Key()]; ok {
				m.mu.enabled[k]++
			}
		}
	}
}

// Quotas returns a copy of every entity's quotas.
func (m *Manager) Quotas() map[Entity]map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[Entity]map[string]float64, len(m.mu.quotas))
	for e, vals := range m.mu.quotas {
		cp := make(map[string]float64, len(vals))
		for k, v := range vals {
			cp[k] = v
		}
		out[e] = cp
	}
	return out
}

// Active reports whether any entity has any quota (without taking a lock).
func (m *Manager) Active() bool { return m.any.Load() }

// Enabled reports whether any entity has a quota of kind k.
func (m *Manager) Enabled(k Kind) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.enabled[k] > 0
}

// Resolve returns the quota of kind k that applies to user (the
// principal's name) and clientID, and the tags of the rate it is measured
// by, with Kafka's precedence (ClientQuotaManager's DefaultQuotaCallback):
//
//  1. users/<user>/clients/<client-id>
//  2. users/<user>/clients/<default>
//  3. users/<user>
//  4. users/<default>/clients/<client-id>
//  5. users/<default>/clients/<default>
//  6. users/<default>
//  7. clients/<client-id>
//  8. clients/<default>
//
// ok is false when none applies.
func (m *Manager) Resolve(k Kind, user, clientID string) (bound float64, t tags, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resolveLocked(k, user, clientID)
}

func (m *Manager) resolveLocked(k Kind, user, clientID string) (float64, tags, bool) {
	if m.mu.enabled[k] == 0 {
		return 0, tags{}, false
	}
	key := k.Key()
	get := func(u, c Part) (float64, bool) {
		v, ok := m.mu.quotas[Entity{User: u, Client: c}][key]
		return v, ok
	}
	has := func(u, c Part) bool { _, ok := get(u, c); return ok }
	U, C, D, none := Named(user), Named(clientID), DefaultPart, Part{}
	t := tags{kind: k}
	switch {
	case has(U, C) || has(U, D):
		t.user, t.client = user, clientID
	case has(U, none):
		t.user = user
	case has(D, C) || has(D, D):
		t.user, t.client = user, clientID
	case has(D, none):
		t.user = user
	default:
		t.client = clientID
	}
	// The quota of those tags (ClientQuotaManager.quotaLimit).
	var order [][2]Part
	switch {
	case t.user != "" && t.client != "":
		order = [][2]Part{{U, C}, {U, D}, {D, C}, {D, D}}
	case t.user != "":
		order = [][2]Part{{U, none}, {D, none}}
	case t.client != "":
		order = [][2]Part{{none, C}, {none, D}}
	}
	for _, o := range order {
		if v, ok := get(o[0], o[1]); ok {
			return v, t, true
		}
	}
	return 0, tags{}, false
}

// Record adds value to the rate of kind k of (user, clientID) at nowMs
// and returns how long the client must be throttled, in ms: 0 while the
// rate is within its quota, else Kafka's QuotaUtils.throttleTime, the time
// over which the excess spreads back under the quota,
// (rate − quota) / quota × window.
func (m *Manager) Record(k Kind, user, clientID string, value float64, nowMs int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	bound, t, ok := m.resolveLocked(k, user, clientID)
	if !ok {
		return 0
	}
	s := m.sensorLocked(t, nowMs)
	s.r.record(value, nowMs)
	return throttleOf(s.r, bound, nowMs)
}

// Unrecord takes back value recorded by Record (a throttled fetch whose
// records are not sent, as Kafka's unrecordQuotaSensor).
func (m *Manager) Unrecord(k Kind, user, clientID string, value float64, nowMs int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, t, ok := m.resolveLocked(k, user, clientID); ok {
		m.sensorLocked(t, nowMs).r.record(-value, nowMs)
	}
}

// Pending returns the throttle time of kind k for (user, clientID) at
// nowMs without recording anything: 0 unless the rate is over its quota
// already (the strict controller mutation quota refuses mutations then).
func (m *Manager) Pending(k Kind, user, clientID string, nowMs int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	bound, t, ok := m.resolveLocked(k, user, clientID)
	if !ok {
		return 0
	}
	s, ok := m.mu.sensors[t]
	if !ok {
		return 0
	}
	return throttleOf(s.r, bound, nowMs)
}

// throttleOf is Kafka's QuotaUtils.throttleTime for rate r and quota bound.
func throttleOf(r *rate, bound float64, nowMs int64) int64 {
	v := r.measure(nowMs)
	if v <= bound {
		return 0
	}
	return int64(math.Round((v - bound) / bound * float64(r.windowSize(nowMs))))
}

// MaxValueInWindow is the most that can be recorded at once without being
// throttled for sure, quota × (samples − 1) windows
// (getMaxValueInQuotaWindow): a fetch response is bounded by it. ok is
// false when no quota applies.
func (m *Manager) MaxValueInWindow(k Kind, user, clientID string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bound, _, ok := m.resolveLocked(k, user, clientID)
	if !ok {
		return 0, false
	}
	return bound * float64(m.cfg.Samples-1) * float64(m.cfg.WindowMs) / 1000, true
}

func (m *Manager) sensorLocked(t tags, now int64) *sensor {
	if now-m.mu.lastSweep >= 60_000 {
		m.mu.lastSweep = now
		for k, s := range m.mu.sensors {
			if now-s.last >= sensorIdleMs {
				delete(m.mu.sensors, k)
			}
		}
	}
	s, ok := m.mu.sensors[t]
	if !ok {
		s = &sensor{r: newRate(m.cfg.Samples, m.cfg.WindowMs)}
		m.mu.sensors[t] = s
	}
	s.last = now
	return s
}
