package groupconfig

import (
	"errors"
	"testing"
)

func TestStoreAlter(t *testing.T) {
	s := NewStore(DefaultBroker())
	var persisted map[string]map[string]string
	fail := false
	s.Attach(map[string]map[string]string{"old": {ShareAutoOffsetReset: "earliest"}}, func(g string, o map[string]string) error {
		if fail {
			return errors.New("disk full")
		}
		if persisted == nil {
			persisted = map[string]map[string]string{}
		}
		persisted[g] = o
		return nil
	})
	if v := s.Values("old"); v.ShareAutoOffsetReset != "earliest" {
		t.Fatalf("loaded override lost: %+v", v)
	}
	set := func(k, v string) func(map[string]string) error {
		return func(cur map[string]string) error { cur[k] = v; return nil }
	}
	// Out of bounds: refused with Kafka's message, nothing stored.
	err := s.Alter("g", false, set(ConsumerSessionTimeoutMs, "70000"))
	var inv *InvalidError
	if !errors.As(err, &inv) || inv.Msg != "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive." {
		t.Fatalf("out of bounds: %v", err)
	}
	if len(s.Overrides("g")) != 0 || persisted["g"] != nil {
		t.Fatal("refused override stored")
	}
	// Validate only: accepted, not stored.
	if err := s.Alter("g", true, set(ConsumerSessionTimeoutMs, "50000")); err != nil || len(s.Overrides("g")) != 0 {
		t.Fatalf("validate only: %v %v", err, s.Overrides("g"))
	}
	if err := s.Alter("g", false, set(ConsumerHeartbeatIntervalMs, "6000")); err != nil {
		t.Fatal(err)
	}
	if v := s.Values("g"); v.ConsumerHeartbeatIntervalMs != 6000 || v.ConsumerSessionTimeoutMs != 45000 || persisted["g"][ConsumerHeartbeatIntervalMs] != "6000" {
		t.Fatalf("values %+v, persisted %v", v, persisted)
	}
	// A failed persist leaves the old set in force.
	fail = true
	if err := s.Alter("g", false, set(ConsumerHeartbeatIntervalMs, "7000")); err == nil || s.Values("g").ConsumerHeartbeatIntervalMs != 6000 {
		t.Fatalf("failed persist: %v, interval %d", err, s.Values("g").ConsumerHeartbeatIntervalMs)
	}
	fail = false
	if err := s.Alter("g", false, func(cur map[string]string) error { delete(cur, ConsumerHeartbeatIntervalMs); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(s.Overrides("g")) != 0 || len(persisted["g"]) != 0 {
		t.Fatalf("delete left %v / %v", s.Overrides("g"), persisted["g"])
	}
}

// TestStoreReloadGroup: one group's overrides are replaced by what the
// metadata store holds, the others kept; an empty set removes them.
func TestStoreReloadGroup(t *testing.T) {
	s := NewStore(DefaultBroker())
	s.Attach(map[string]map[string]string{"a": {ShareAutoOffsetReset: "earliest"}, "b": {ShareAutoOffsetReset: "earliest"}}, nil)
	s.ReloadGroup("c", map[string]string{ShareAutoOffsetReset: "earliest"})
	s.ReloadGroup("a", nil)
	if v := s.Values("c"); v.ShareAutoOffsetReset != "earliest" {
		t.Fatalf("reloaded group c: %+v", v)
	}
	if v := s.Values("a"); v.ShareAutoOffsetReset != "latest" || len(s.Overrides("a")) != 0 {
		t.Fatalf("group a reloaded without overrides: %+v %v", v, s.Overrides("a"))
	}
	if v := s.Values("b"); v.ShareAutoOffsetReset != "earliest" {
		t.Fatalf("group b untouched: %+v", v)
	}
}
