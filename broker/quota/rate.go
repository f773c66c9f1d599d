package quota

// rate is Kafka's Rate over a SampledStat (org.apache.kafka.common.metrics):
// the sum of the values recorded in the last `samples` windows of
// `windowMs` each, divided by the time they span, in units per second.
// It reads no clock: every call takes the time in ms, so tests drive it
// with a fake clock.
//
// Invariant: len(s) ≤ samples; cur indexes the sample being filled.
type rate struct {
	samples  int
	windowMs int64
	s        []sample
	cur      int
}

// sample is one window: its start and the sum recorded in it.
type sample struct {
	start int64
	value float64
}

func newRate(samples int, windowMs int64) *rate {
	if samples < 2 {
		samples = 2
	}
	if windowMs < 1 {
		windowMs = 1
	}
	return &rate{samples: samples, windowMs: windowMs}
}

// record adds v at time now: into the current window while it is younger
// than windowMs, else into the next one (the oldest, reset), as
// SampledStat.record advances.
func (r *rate) record(v float64, now int64) {
	if len(r.s) == 0 {
		r.s = append(r.s, sample{start: now})
		r.cur = 0
	}
	if now-r.s[r.cur].start >= r.windowMs {
		r.cur = (r.cur + 1) % r.samples
		if r.cur >= len(r.s) {
			r.s = append(r.s, sample{start: now})
		} else {
			r.s[r.cur] = sample{start: now}
		}
	}
	r.s[r.cur].value += v
}

// purge resets the samples older than samples × windowMs
// (SampledStat.purgeObsoleteSamples).
func (r *rate) purge(now int64) {
	expire := int64(r.samples) * r.windowMs
	for i := range r.s {
		if now-r.s[i].start >= expire {
			r.s[i] = sample{start: now}
		}
	}
}

// windowSize is the span in ms the rate divides by (Rate.windowSize): from
// the oldest sample's start to now, but at least samples-1 full windows, so
// a new sensor is not throttled on its first burst, and at least 1 ms.
func (r *rate) windowSize(now int64) int64 {
	r.purge(now)
	oldest := now
	for _, s := range r.s {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full, minFull := elapsed/r.windowMs, int64(r.samples-1); full < minFull {
		elapsed += (minFull - full) * r.windowMs
	}
	return max(elapsed, 1)
}

// measure is the rate per second at now (Rate.measure).
func (r *rate) measure(now int64) float64 {
	ws := r.windowSize(now) // purges first
	var sum float64
	for _, s := range r.s {
		sum += s.value
	}
	return sum / (float64(ws) / 1000)
}
