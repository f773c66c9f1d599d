package schemaregistry

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Content types of Confluent's REST API: requests may use any of them
// (or none); answers use the first the client accepts, by default
// application/vnd.schemaregistry.v1+json.
const (
	contentTypeV1      = "application/vnd.schemaregistry.v1+json"
	contentTypeDefault = "application/vnd.schemaregistry+json"
	contentTypeJSON    = "application/json"
)

var requestContentTypes = []string{contentTypeV1, contentTypeDefault, contentTypeJSON, "application/octet-stream"}

// endpointFunc is a handler that returns its status and body (JSON, or
// rawBody, or a forwardedAnswer) or an error.
type endpointFunc func(w http.ResponseWriter, req *http.Request) (int, any, error)

func (r *Registry) routes() *http.ServeMux {
	mux := http.NewServeMux()
	paths := map[string]bool{}
	h := func(pattern string, f endpointFunc) {
		mux.Handle(pattern, r.endpoint(f))
		// Other methods on a known path: Confluent's JSON 405.
		if _, path, ok := strings.Cut(pattern, " "); ok && !paths[path] {
			paths[path] = true
			mux.Handle(path, r.endpoint(func(http.ResponseWriter, *http.Request) (int, any, error) {
				return 0, nil, errHTTP(http.StatusMethodNotAllowed, "HTTP 405 Method Not Allowed")
			}))
		}
	}
	// Writes go to the writer (forward.go).
	wr := func(pattern string, f endpointFunc) { h(pattern, r.writes(f)) }
	h("GET /{$}", func(http.ResponseWriter, *http.Request) (int, any, error) { return 200, struct{}{}, nil })
	h("GET /schemas/types", func(http.ResponseWriter, *http.Request) (int, any, error) { return 200, schemaTypes, nil })
	h("GET /schemas", r.listSchemas)
	h("GET /schemas/ids/{id}", r.idEndpoint(byIDAnswer))
	h("GET /schemas/ids/{id}/schema", r.idEndpoint(func(_ *state, _ *http.Request, v *schemaValue) any { return rawBody(v.Schema) }))
	h("GET /schemas/ids/{id}/subjects", r.getSubjectsByID)
	h("GET /schemas/ids/{id}/versions", r.getVersionsByID)
	h("GET /subjects", r.listSubjects)
	h("GET /subjects/{subject}/versions", r.listVersions)
	wr("POST /subjects/{subject}/versions", r.registerSchema)
	h("GET /subjects/{subject}/versions/{version}", r.versionEndpoint(false, func(_ *state, v *schemaValue) any { return toResponse(v) }))
	h("GET /subjects/{subject}/versions/{version}/schema", r.versionEndpoint(false, func(_ *state, v *schemaValue) any { return rawBody(v.Schema) }))
	h("GET /subjects/{subject}/versions/{version}/referencedby", r.versionEndpoint(true, func(st *state, v *schemaValue) any {
		return st.referencedBy(v.Subject, v.Version, false)
	}))
	wr("DELETE /subjects/{subject}/versions/{version}", r.deleteVersionHandler)
	h("POST /subjects/{subject}", r.lookupSchema)
	wr("DELETE /subjects/{subject}", r.deleteSubjectHandler)
	h("GET /config", r.getConfig)
	wr("PUT /config", r.putConfig)
	wr("DELETE /config", r.deleteConfigHandler)
	h("GET /config/{subject}", r.getConfig)
	wr("PUT /config/{subject}", r.putConfig)
	wr("DELETE /config/{subject}", r.deleteConfigHandler)
	h("GET /mode", r.getMode)
	wr("PUT /mode", r.putMode)
	wr("DELETE /mode", r.deleteModeHandler)
	h("GET /mode/{subject}", r.getMode)
	wr("PUT /mode/{subject}", r.putMode)
	wr("DELETE /mode/{subject}", r.deleteModeHandler)
	h("POST /compatibility/subjects/{subject}/versions/{version}", r.checkCompatibilityHandler)
	h("POST /compatibility/subjects/{subject}/versions", r.checkCompatibilityHandler)
	h("GET /contexts", func(http.ResponseWriter, *http.Request) (int, any, error) { return 200, []string{"."}, nil })
	h("GET /v1/metadata/id", r.clusterIDHandler)
	h("/", func(http.ResponseWriter, *http.Request) (int, any, error) {
		return 0, nil, errHTTP(http.StatusNotFound, "HTTP 404 Not Found")
	})
	return mux
}

// rawBody marks a result written as is (the /schema endpoints), not as
// JSON.
type rawBody string

// endpoint adapts a handler that returns (status, body, error) to
// Confluent's content negotiation and error shape.
func (r *Registry) endpoint(f endpointFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ct, ok := negotiate(req.Header.Get("Accept"))
		if !ok {
			writeJSON(w, contentTypeV1, http.StatusNotAcceptable, errorBody(errHTTP(http.StatusNotAcceptable, "HTTP 406 Not Acceptable")))
			return
		}
		if req.Method == http.MethodPost || req.Method == http.MethodPut {
			if !acceptedContentType(req.Header.Get("Content-Type")) {
				writeJSON(w, ct, http.StatusUnsupportedMediaType, errorBody(errHTTP(http.StatusUnsupportedMediaType, "HTTP 415 Unsupported Media Type")))
				return
			}
			req.Body = http.MaxBytesReader(w, req.Body, r.cfg.MaxBodyBytes)
		}
		status, body, err := f(w, req)
		if err != nil {
			e := asError(err)
			writeJSON(w, ct, e.Status, errorBody(e))
			return
		}
		if fa, ok := body.(forwardedAnswer); ok {
			w.Header().Set("Content-Type", fa.ct)
			if fa.writer != "" {
				w.Header().Set(headerWriter, fa.writer)
			}
			w.WriteHeader(fa.status)
			w.Write(fa.body)
			return
		}
		if raw, ok := body.(rawBody); ok {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			io.WriteString(w, string(raw))
			return
		}
		writeJSON(w, ct, status, body)
	})
}

func errorBody(e *Error) any {
	return struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}{e.Code, e.Message}
}

func writeJSON(w http.ResponseWriter, ct string, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error_code":50001,"message":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	w.Write(b)
}

// negotiate picks the answer's content type from Accept: the first of
// Confluent's three the client lists (*/* and application/* mean the
// default); false when it accepts none of them.
func negotiate(accept string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return contentTypeV1, true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case contentTypeV1, contentTypeDefault, contentTypeJSON:
			return mt, true
		case "*/*", "application/*":
			return contentTypeV1, true
		}
	}
	return "", false
}

func acceptedContentType(ct string) bool {
	if strings.TrimSpace(ct) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	for _, ok := range requestContentTypes {
		if mt == ok {
			return true
		}
	}
	return false
}

// decodeBody reads a JSON body into v: too large is 413, malformed JSON
// 400 and a wrongly typed field 422, as Confluent's rest-utils answers.
func decodeBody(req *http.Request, v any) error {
	b, err := readBody(req)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return errHTTP(statusUnprocessable, "Unrecognized or mistyped field: "+err.Error())
		}
		return errHTTP(http.StatusBadRequest, "Unexpected character or malformed JSON: "+err.Error())
	}
	return nil
}

// readBody reads a request's (bounded) body: too large is 413.
func readBody(req *http.Request) ([]byte, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errHTTP(http.StatusRequestEntityTooLarge, "Request body is larger than "+strconv.FormatInt(tooLarge.Limit, 10)+" bytes")
		}
		return nil, errHTTP(http.StatusBadRequest, "reading the request body: "+err.Error())
	}
	return b, nil
}

// boolParam is a query flag (true in any case).
func boolParam(req *http.Request, name string) bool {
	return strings.EqualFold(req.URL.Query().Get(name), "true")
}

// parseVersion reads a version path segment: a number in [1, 2^31-1], or
// latest or -1 (returned as -1).
func parseVersion(s string) (int, error) {
	if strings.EqualFold(s, "latest") {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n == 0 || n < -1 {
		return 0, errInvalidVersion(s)
	}
	return int(n), nil
}

// schemaResponse is Confluent's Schema entity: a version of a subject,
// the record's fields but for AVRO's schemaType, and "deleted" only when
// true (this field hides the record's).
type schemaResponse struct {
	schemaValue
	Deleted bool `json:"deleted,omitempty"`
}

func toResponse(v *schemaValue) schemaResponse {
	out := schemaResponse{schemaValue: *v, Deleted: v.Deleted}
	out.SchemaType = responseType(v.SchemaType)
	return out
}

// responseType leaves AVRO out, as Confluent's answers do.
func responseType(t string) string {
	if t == typeAvro {
		return ""
	}
	return t
}
