package broker

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kbroker/kbroker/broker/metrics"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestLog wraps the API handler with the request log: at DEBUG (log.level
// DEBUG or TRACE) one line per answered request, as Kafka's
// kafka.request.logger does at DEBUG: who asked (client address, client id,
// principal, listener), what (API name, key and version, correlation id),
// how long it took, and the error codes of the answer when there are any.
// At INFO and above it costs one Enabled check per request.
func requestLog(log *slog.Logger, next network.Handler) network.Handler {
	return network.HandlerFunc(func(rc *network.RequestContext, req protocol.Request) kmsg.Response {
		if !log.Enabled(context.Background(), slog.LevelDebug) {
			return next.Handle(rc, req)
		}
		start := time.Now()
		resp := next.Handle(rc, req)
		took := time.Since(start)
		attrs := []slog.Attr{
			slog.String("client", rc.RemoteAddr),
			slog.String("client_id", req.Header.ClientID),
			slog.String("principal", rc.Principal),
			slog.String("listener", rc.Listener.Name),
			slog.String("api", metrics.RequestName(req.Header.APIKey)),
			slog.Int("api_key", int(req.Header.APIKey)),
			slog.Int("api_version", int(req.Header.APIVersion)),
			slog.Int("correlation_id", int(req.Header.CorrelationID)),
			slog.Duration("took", took),
		}
		if codes := metrics.ErrorCodes(resp); codes != nil {
			attrs = append(attrs, slog.String("errors", errorSummary(codes)))
		}
		if resp == nil {
			attrs = append(attrs, slog.Bool("no_response", true))
		}
		log.LogAttrs(context.Background(), slog.LevelDebug, "request", attrs...)
		return resp
	})
}

// errorSummary is "NAME" or "NAME×n" per error code, by name.
func errorSummary(codes map[int16]int) string {
	parts := make([]string, 0, len(codes))
	for code, n := range codes {
		s := metrics.ErrorName(code)
		if n > 1 {
			s += "x" + strconv.Itoa(n)
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
