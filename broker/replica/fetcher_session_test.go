package replica

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listed is what a Fetch carries: "topic-partition@offset" per partition
// and "topic-partition" per forgotten one, sorted.
func listed(req *kmsg.FetchRequest) (parts, forgotten []string) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d@%d", t.Topic, p.Partition, p.FetchOffset))
		}
	}
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			forgotten = append(forgotten, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	slices.Sort(parts)
	slices.Sort(forgotten)
	return parts, forgotten
}

// A follower's session: full first, then only what changed (and what it
// stopped copying as forgotten); a session error, a lost answer or a
// leader without room sends the next request full; below v7 there is no
// session.
func TestFollowerSessionFill(t *testing.T) {
	tp := func(topic string, p int32) storage.TopicPartition {
		return storage.TopicPartition{Topic: topic, Partition: p}
	}
	at := func(off int64) sentPartition { return sentPartition{epoch: 1, fetchOffset: off, maxBytes: 1 << 20} }
	var s followerSession
	// parts keeps its entries from round to round, as a fetcher's
	// f.round.parts does while no partition is added or removed.
	var parts []roundPart
	use := func(want map[storage.TopicPartition]sentPartition) {
		keep := parts[:0]
		for _, rp := range parts {
			if _, ok := want[rp.tp]; ok {
				keep = append(keep, rp)
			}
		}
		parts = keep
		for tp, sp := range want {
			i := slices.IndexFunc(parts, func(rp roundPart) bool { return rp.tp == tp })
			if i < 0 {
				parts = append(parts, roundPart{tp: tp})
				i = len(parts) - 1
			}
			parts[i].wanted, parts[i].want = true, sp
		}
	}
	round := func(want map[storage.TopicPartition]sentPartition, id, epoch int32, wantParts, wantForgotten []string, resp *kmsg.FetchResponse, err error) {
		t.Helper()
		use(want)
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		s.fill(req, parts)
		got, forgotten := listed(req)
		if req.SessionID != id || req.SessionEpoch != epoch || !slices.Equal(got, wantParts) || !slices.Equal(forgotten, wantForgotten) {
			t.Fatalf("request: session %d epoch %d, partitions %v, forgotten %v; want session %d epoch %d, %v, %v",
				req.SessionID, req.SessionEpoch, got, forgotten, id, epoch, wantParts, wantForgotten)
		}
		s.answered(resp, err)
	}
	ok := func(id int32) *kmsg.FetchResponse { r := kmsg.NewPtrFetchResponse(); r.SessionID = id; return r }
	failed := func(e *kerr.Error) *kmsg.FetchResponse { r := ok(0); r.ErrorCode = e.Code; return r }

	two := map[storage.TopicPartition]sentPartition{tp("a", 0): at(5), tp("a", 1): at(7)}
	round(two, 0, 0, []string{"a-0@5", "a-1@7"}, nil, ok(42), nil)
	round(two, 42, 1, nil, nil, ok(42), nil) // nothing changed: an empty incremental
	moved := map[storage.TopicPartition]sentPartition{tp("a", 0): at(6), tp("b", 0): at(1)}
	round(moved, 42, 2, []string{"a-0@6", "b-0@1"}, []string{"a-1"}, failed(kerr.InvalidFetchSessionEpoch), nil)
	round(moved, 42, 0, []string{"a-0@6", "b-0@1"}, nil, ok(43), nil) // full, closing 42
	round(moved, 43, 1, nil, nil, nil, errors.New("connection reset"))
	round(moved, 43, 0, []string{"a-0@6", "b-0@1"}, nil, ok(43), nil)
	round(moved, 43, 1, nil, nil, failed(kerr.FetchSessionIDNotFound), nil)
	round(moved, 0, 0, []string{"a-0@6", "b-0@1"}, nil, ok(0), nil) // the leader has no room
	round(moved, 0, 0, []string{"a-0@6", "b-0@1"}, nil, ok(44), nil)
	round(moved, 44, 1, nil, nil, ok(44), nil)

	// A partition kept in the round but not wanted (backing off) is
	// forgotten, and sent in full again when it is wanted again.
	use(moved)
	parts[slices.IndexFunc(parts, func(rp roundPart) bool { return rp.tp == tp("b", 0) })].wanted = false
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	s.fill(req, parts)
	if got, forgotten := listed(req); len(got) != 0 || !slices.Equal(forgotten, []string{"b-0"}) {
		t.Fatalf("b-0 backing off: partitions %v, forgotten %v; want none and [b-0]", got, forgotten)
	}
	s.answered(ok(44), nil)
	round(moved, 44, 3, []string{"b-0@1"}, nil, ok(44), nil)

	// A new round list (partitions added or removed) forgets what left it.
	parts = nil
	round(two, 44, 4, []string{"a-0@5", "a-1@7"}, []string{"b-0"}, ok(44), nil)

	req = kmsg.NewPtrFetchRequest()
	req.Version = 6
	s.fill(req, parts)
	if got, _ := listed(req); req.SessionID != 0 || req.SessionEpoch != -1 || len(got) != 2 {
		t.Fatalf("v6: session %d epoch %d with %v, want session-less with both partitions", req.SessionID, req.SessionEpoch, got)
	}
}
