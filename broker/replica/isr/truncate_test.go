package isr

import "testing"

// cache is a leader-epoch cache as a list of (epoch, start offset), with
// Kafka's endOffsetFor lookup over a log ending at leo.
type cache struct {
	entries []EpochEnd // EndOffset holds the start offset here
	leo     int64
}

func (c cache) endFor(epoch int32) EpochEnd {
	if len(c.entries) == 0 {
		return EpochEnd{UndefinedEpoch, UndefinedOffset}
	}
	hi := 0
	for hi < len(c.entries) && c.entries[hi].Epoch <= epoch {
		hi++
	}
	switch {
	case hi == 0:
		return EpochEnd{epoch, c.entries[0].EndOffset}
	case hi == len(c.entries):
		return EpochEnd{c.entries[hi-1].Epoch, c.leo}
	}
	return EpochEnd{c.entries[hi-1].Epoch, c.entries[hi].EndOffset}
}

func (c cache) latest() int32 { return c.entries[len(c.entries)-1].Epoch }

// converge runs the follower's OffsetForLeaderEpoch loop to its end and
// returns the offset it truncates to and how many round trips it took.
func converge(t *testing.T, leader, follower cache, hw int64) (int64, int) {
	t.Helper()
	ask := follower.latest()
	leo := follower.leo
	for round := 1; round <= 10; round++ {
		tr := Truncate(leader.endFor(ask), follower.endFor, leo, hw)
		if tr.Offset > leo {
			t.Fatalf("truncation to %d beyond the follower's log end %d", tr.Offset, leo)
		}
		leo = tr.Offset
		if tr.Done {
			return leo, round
		}
		ask = tr.Again
	}
	t.Fatal("truncation did not converge")
	return 0, 0
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name             string
		leader, follower cache
		hw               int64
		want             int64
		rounds           int
	}{
		{
			// KIP-101 case 1: the follower restarts with a stale HW (1) but
			// holds offset 1, which the leader acknowledged (its HW is 2).
			// Truncating to the HW would lose it if the follower then leads.
			name:     "kip101 stale hw keeps acknowledged data",
			leader:   cache{[]EpochEnd{{0, 0}}, 2},
			follower: cache{[]EpochEnd{{0, 0}}, 2},
			hw:       1, want: 2, rounds: 1,
		},
		{
			// KIP-101 case 2: A held m2 at offset 1 (epoch 0) unreplicated;
			// B led epoch 1 and wrote m3 at offset 1. A must drop its m2.
			name:     "kip101 divergent logs",
			leader:   cache{[]EpochEnd{{0, 0}, {1, 1}}, 2},
			follower: cache{[]EpochEnd{{0, 0}}, 2},
			hw:       1, want: 1, rounds: 1,
		},
		{
			// KIP-279: the leader answers with an older epoch (1) that the
			// follower also has, ending at 3 on the leader and 4 here.
			name:     "kip279 leader answers an older shared epoch",
			leader:   cache{[]EpochEnd{{0, 0}, {1, 2}, {3, 3}}, 6},
			follower: cache{[]EpochEnd{{0, 0}, {1, 2}, {2, 4}}, 6},
			hw:       2, want: 3, rounds: 1,
		},
		{
			// KIP-279: the leader answers with epoch 1, which the follower
			// never saw; it cuts to the end of its own epoch 0 and asks again.
			name:     "kip279 leader answers an epoch the follower lacks",
			leader:   cache{[]EpochEnd{{0, 0}, {1, 2}, {3, 4}}, 7},
			follower: cache{[]EpochEnd{{0, 0}, {2, 2}}, 5},
			hw:       1, want: 2, rounds: 2,
		},
		{
			name:     "follower behind keeps everything",
			leader:   cache{[]EpochEnd{{0, 0}, {1, 10}}, 20},
			follower: cache{[]EpochEnd{{0, 0}, {1, 10}}, 12},
			hw:       5, want: 12, rounds: 1,
		},
		{
			name:     "leader without epoch history falls back to the hw",
			leader:   cache{nil, 0},
			follower: cache{[]EpochEnd{{0, 0}}, 4},
			hw:       3, want: 3, rounds: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rounds := converge(t, tc.leader, tc.follower, tc.hw)
			if got != tc.want || rounds != tc.rounds {
				t.Fatalf("truncated to %d in %d rounds, want %d in %d", got, rounds, tc.want, tc.rounds)
			}
		})
	}
}
