package zkclient

import (
	"sync/atomic"
	"testing"
)

func TestPipelineRunsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, MaxInFlight, 3*MaxInFlight + 7} {
		seen := make([]atomic.Int32, n)
		Pipeline(n, func(i int) { seen[i].Add(1) })
		for i := range seen {
			if v := seen[i].Load(); v != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, v)
			}
		}
	}
}
