package api

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientAttrs prefixes a log line's attributes with who asked and what:
// the client's address and id, and the API. Every warning or error a
// request causes carries them (issue 15), with the topic and partition
// involved among args where there is one, so that an operator can find the
// client behind a failure in the log alone.
func clientAttrs(ctx *network.RequestContext, args ...any) []any {
	if ctx == nil {
		return args
	}
	return append([]any{"client", ctx.RemoteAddr, "client_id", ctx.Header.ClientID, "api", kmsg.NameForKey(ctx.Header.APIKey)}, args...)
}
