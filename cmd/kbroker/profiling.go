package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// Block and mutex profiles are empty unless sampling is turned on, which
// costs some CPU on every contended lock and channel wait; diagnosing tail
// latency (docs/PERFORMANCE.md) needs them, so two environment variables
// turn them on for one process, read with /debug/pprof/block and
// /debug/pprof/mutex (http.pprof.enable):
//
//   - KBROKER_BLOCK_PROFILE_RATE: runtime.SetBlockProfileRate, one blocking
//     event sampled per that many nanoseconds spent blocked (1: all);
//   - KBROKER_MUTEX_PROFILE_FRACTION: runtime.SetMutexProfileFraction, one
//     in that many contention events sampled (1: all).
const (
	blockRateVar     = "KBROKER_BLOCK_PROFILE_RATE"
	mutexFractionVar = "KBROKER_MUTEX_PROFILE_FRACTION"
)

// setProfileRates applies the two variables found in environ.
func setProfileRates(environ []string) error {
	for _, kv := range environ {
		name, v, _ := strings.Cut(kv, "=")
		if name != blockRateVar && name != mutexFractionVar {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q: want a non-negative integer", name, v)
		}
		if name == blockRateVar {
			runtime.SetBlockProfileRate(n)
		} else {
			runtime.SetMutexProfileFraction(n)
		}
	}
	return nil
}
