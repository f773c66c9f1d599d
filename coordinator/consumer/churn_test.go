package consumer

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestChurnNeverDoubleAssigns drives simulated consumers through random
// joins, leaves, silences, topic changes and assignor switches, and checks
// after every step that no two consumers own a partition at once; at the
// end, with everyone polling, the group must converge to Stable with every
// partition owned.
func TestChurnNeverDoubleAssigns(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			h := newHarness(t, nil)
			h.setTopic("t", 7)
			h.setTopic("u", 3)
			re := "u|v"
			var sims []*sim
			for i := 0; i < 5; i++ {
				s := &sim{id: fmt.Sprintf("m%d", i), topics: []string{"t"}}
				switch i {
				case 1:
					s.instance = kmsg.StringPtr("static-1")
				case 2:
					s.topics, s.regex = nil, &re
				case 3:
					s.topics = []string{"t", "u"}
					s.assignor = kmsg.StringPtr("range")
				}
				sims = append(sims, s)
			}
			alive := func() []*sim {
				var out []*sim
				for _, s := range sims {
					if s.joined {
						out = append(out, s)
					}
				}
				return out
			}
			for step := 0; step < 300; step++ {
				s := sims[rng.Intn(len(sims))]
				switch k := rng.Intn(20); {
				case k < 14:
					h.poll(s)
				case k == 14 && s.joined:
					req := withEpoch(beatReq(s.id, s.epoch, nil), -1)
					wantCode(t, h.send(req), 0)
					s.joined, s.owned = false, assignment{}
				case k == 15 && s.joined && s.instance != nil:
					req := withEpoch(beatReq(s.id, s.epoch, nil), -2)
					req.InstanceID = s.instance
					wantCode(t, h.send(req), 0)
					// The process restarts with a new member id.
					s.joined, s.owned = false, assignment{}
					s.id = fmt.Sprintf("m1-%d", step)
				case k == 16:
					h.advance(time.Duration(rng.Intn(20)) * time.Second)
				case k == 17:
					h.setTopic("v", int32(1+rng.Intn(4)))
					h.metadataChanged()
				case k == 18:
					h.advance(time.Second)
				}
				// A consumer whose member was fenced stops consuming at once.
				for _, o := range sims {
					if o.joined && h.c.groups["g"] != nil && h.c.groups["g"].members[o.id] == nil {
						o.joined, o.owned = false, assignment{}
					}
				}
				h.assertDisjoint(sims...)
			}
			for _, s := range sims {
				if !s.joined {
					h.poll(s)
				}
			}
			for i := 0; i < 8; i++ {
				for _, s := range alive() {
					h.poll(s)
					h.assertDisjoint(sims...)
				}
			}
			if st := h.state(); st != "Stable" {
				t.Fatalf("did not converge: %s\n%s", st, dump(h.c))
			}
			total := 0
			for _, s := range alive() {
				total += s.owned.count()
			}
			want := 7 + 3
			if v := h.c.topicIndex().byName["v"]; v.Partitions > 0 {
				want += int(v.Partitions)
			}
			if total != want {
				t.Fatalf("%d partitions owned, want %d\n%s", total, want, dump(h.c))
			}
		})
	}
}
