package groupconfig

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	b := DefaultBroker()
	for _, tc := range []struct {
		overrides map[string]string
		err       string // substring; empty means valid
	}{
		{map[string]string{}, ""},
		{map[string]string{ConsumerSessionTimeoutMs: "50000", ConsumerHeartbeatIntervalMs: "6000"}, ""},
		{map[string]string{ShareAutoOffsetReset: "earliest", ShareIsolationLevel: "read_committed"}, ""},
		{map[string]string{"consumer.bogus": "1"}, "Unknown group config name: consumer.bogus"},
		{map[string]string{ConsumerSessionTimeoutMs: "abc"}, "Not a number of type INT"},
		{map[string]string{ConsumerSessionTimeoutMs: "0"}, "Value must be at least 1"},
		{map[string]string{ConsumerSessionTimeoutMs: "10000"}, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{map[string]string{ConsumerSessionTimeoutMs: "70000"}, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{map[string]string{ConsumerHeartbeatIntervalMs: "16000"}, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{map[string]string{ShareRecordLockDurationMs: "1000"}, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{map[string]string{ShareAutoOffsetReset: "none"}, "String must be one of: latest, earliest"},
		{map[string]string{ShareDeliveryCountLimit: "11"}, "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
	} {
		err := b.Validate(tc.overrides)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.overrides, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: err = %v, want %q", tc.overrides, err, tc.err)
		}
	}
	// The cross check: with wider broker bounds, a heartbeat interval at or
	// above the session timeout is refused.
	b.ConsumerMinSessionTimeoutMs, b.ConsumerMaxHeartbeatIntervalMs = 1000, 60000
	err := b.Validate(map[string]string{ConsumerSessionTimeoutMs: "6000", ConsumerHeartbeatIntervalMs: "6000"})
	if err == nil || err.Error() != "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms" {
		t.Fatalf("session <= heartbeat: %v", err)
	}
}

func TestEffectiveAndDefs(t *testing.T) {
	b := DefaultBroker()
	e := b.Effective(map[string]string{ConsumerSessionTimeoutMs: "50000", ShareAutoOffsetReset: "earliest"})
	if e.ConsumerSessionTimeoutMs != 50000 || e.ConsumerHeartbeatIntervalMs != 5000 || e.ShareAutoOffsetReset != "earliest" || e.ShareIsolationLevel != "read_uncommitted" {
		t.Fatalf("effective = %+v", e)
	}
	for _, d := range Defs() {
		if d.Doc == "" || b.Default(d.Name) == "" {
			t.Errorf("%s: missing doc or default", d.Name)
		}
		if err := b.Validate(map[string]string{d.Name: b.Default(d.Name)}); err != nil {
			t.Errorf("default of %s refused: %v", d.Name, err)
		}
	}
}
