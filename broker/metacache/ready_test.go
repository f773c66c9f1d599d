package metacache

import (
	"strings"
	"testing"
)

func TestCaughtUp(t *testing.T) {
	c := New()
	if err := c.Snapshot().CaughtUp(3); err == nil || !strings.Contains(err.Error(), "live brokers") {
		t.Fatalf("before any UpdateMetadata: %v, want not live", err)
	}
	// Broker 3 follows t-0 (leader 1) and t-1 (leader 2) outside their ISRs.
	c.Apply(update(8, []int32{1, 2, 3}, "t", 7, part(0, 1, 0, 1, 2), part(1, 2, 0, 2, 1)))
	err := c.Snapshot().CaughtUp(3)
	if err == nil || !strings.Contains(err.Error(), "not yet in the ISR of 2 partitions") {
		t.Fatalf("outside two ISRs: %v", err)
	}
	if err := c.Snapshot().CaughtUp(1); err != nil {
		t.Fatalf("broker 1 is in every ISR: %v", err)
	}
	// t-1's leader dies and nobody can be elected: it no longer counts.
	c.Apply(update(8, []int32{1, 3}, "t", 7, part(0, 1, 1, 1, 3), part(1, -1, 1, 2, 1)))
	if err := c.Snapshot().CaughtUp(3); err != nil {
		t.Fatalf("in t-0's ISR, t-1 offline: %v", err)
	}
	// A partition led by a broker the controller no longer lists as live
	// does not count either.
	c.Apply(update(8, []int32{1, 3}, "t", 7, part(1, 2, 2, 2)))
	if err := c.Snapshot().CaughtUp(3); err != nil {
		t.Fatalf("t-1 led by a dead broker: %v", err)
	}
}
