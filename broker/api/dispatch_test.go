package api

import (
	"slices"
	"testing"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEveryAdvertisedAPIHasAHandler: the keys ApiVersions advertises
// (protocol/apis.go) and the keys of the dispatch table are the same set, so
// no advertised request is left unanswered and no handler is unreachable;
// each handler asserts the request type of its key by construction (on).
func TestEveryAdvertisedAPIHasAHandler(t *testing.T) {
	adv := append(protocol.SupportedKeys(), protocol.InterBrokerKeys()...)
	slices.Sort(adv)
	got := HandledKeys()
	slices.Sort(got)
	for _, k := range adv {
		if _, ok := handlers[k]; !ok {
			t.Errorf("%s (key %d) is advertised in ApiVersions but has no handler", kmsg.NameForKey(k), k)
		}
	}
	for _, k := range got {
		_, ok := protocol.Supported(k)
		if _, ib := protocol.InterBroker(k); !ok && !ib {
			t.Errorf("%s (key %d) has a handler but is not advertised", kmsg.NameForKey(k), k)
		}
	}
	if !slices.Equal(adv, got) {
		t.Errorf("advertised %v, handled %v", adv, got)
	}
}
