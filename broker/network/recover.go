package network

import (
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handle runs the handler for one request. A panic in it (a bug: handlers
// must not panic on any input) never takes the broker down: it is
// recovered, logged once with the request's API, version and client id and
// the stack, counted (HandlerPanics), and answered with
// UNKNOWN_SERVER_ERROR when the response has a top-level error code, as
// Kafka answers an unexpected exception; otherwise the connection closes.
func (c *conn) handle(ctx *RequestContext, req protocol.Request) (resp kmsg.Response) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		c.s.panics.Add(1)
		h := req.Header
		c.s.log.Error("handler panicked; answering with UNKNOWN_SERVER_ERROR", "client", c.addr, "client_id", h.ClientID,
			"api", kmsg.NameForKey(h.APIKey), "version", h.APIVersion, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		resp = ErrorResponse(req.Body, kerr.UnknownServerError.Code)
		if resp == nil {
			ctx.CloseConn = true
		}
	}()
	return c.s.cfg.Handler.Handle(ctx, req)
}

// ErrorResponse is req's response kind with its top-level ErrorCode set to
// code, or nil if that response has no top-level error code at req's
// version (the caller then closes the connection).
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	if req == nil {
		return nil
	}
	resp := req.ResponseKind()
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return nil
	}
	// The field exists in every version of the Go type; the wire carries it
	// only from some version on (Metadata: v13). It is an error field of
	// this request only if setting it changes the encoding.
	without := resp.AppendTo(nil)
	f.SetInt(int64(code))
	if string(resp.AppendTo(nil)) == string(without) {
		return nil
	}
	return resp
}
