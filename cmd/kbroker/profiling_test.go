package main

import (
	"runtime"
	"testing"
)

// TestSetProfileRates: the two variables set the runtime's sampling, other
// variables are ignored, and a malformed value is refused by name.
func TestSetProfileRates(t *testing.T) {
	defer runtime.SetBlockProfileRate(0)
	defer runtime.SetMutexProfileFraction(0)
	if err := setProfileRates([]string{"HOME=/x", "KBROKER_MUTEX_PROFILE_FRACTION=7", "KBROKER_BLOCK_PROFILE_RATE=1000"}); err != nil {
		t.Fatal(err)
	}
	if got := runtime.SetMutexProfileFraction(-1); got != 7 {
		t.Errorf("mutex profile fraction %d, want 7", got)
	}
	for _, bad := range []string{"KBROKER_BLOCK_PROFILE_RATE=x", "KBROKER_MUTEX_PROFILE_FRACTION=-2"} {
		if err := setProfileRates([]string{bad}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
