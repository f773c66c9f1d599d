package schemaregistry

import (
	"net/http"
	"strconv"
	"strings"
)

// The /subjects endpoints.

// lookupVersion finds subject's version named by versionArg (a number,
// latest or -1); soft-deleted versions count only with deleted.
func (s *state) lookupVersion(subject, versionArg string, deleted bool) (*schemaValue, error) {
	n, err := parseVersion(versionArg)
	if err != nil {
		return nil, err
	}
	vs := s.versions(subject, deleted)
	if len(vs) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	if n == -1 {
		// latest: the newest live version, else (deleted) the newest.
		if live := s.versions(subject, false); len(live) > 0 {
			return live[len(live)-1], nil
		}
		return vs[len(vs)-1], nil
	}
	for _, v := range vs {
		if v.Version == n {
			return v, nil
		}
	}
	return nil, errVersionNotFound(n)
}

func (r *Registry) listSubjects(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	var out []string
	prefix := req.URL.Query().Get("subjectPrefix")
	err := r.view(ctx, func(st *state) error {
		if boolParam(req, "deletedOnly") {
			live := map[string]bool{}
			for _, s := range st.subjectNames(prefix, false) {
				live[s] = true
			}
			out = []string{}
			for _, s := range st.subjectNames(prefix, true) {
				if !live[s] {
					out = append(out, s)
				}
			}
			return nil
		}
		out = st.subjectNames(prefix, boolParam(req, "deleted"))
		return nil
	})
	return http.StatusOK, out, err
}

func (r *Registry) listVersions(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	subject := req.PathValue("subject")
	out := []int{}
	err := r.view(ctx, func(st *state) error {
		deletedOnly := boolParam(req, "deletedOnly")
		vs := st.versions(subject, deletedOnly || boolParam(req, "deleted"))
		if len(vs) == 0 {
			return errSubjectNotFound(subject)
		}
		for _, v := range vs {
			if !deletedOnly || v.Deleted {
				out = append(out, v.Version)
			}
		}
		return nil
	})
	return http.StatusOK, out, err
}

// versionEndpoint serves what answer makes of the version the path names
// (soft-deleted ones with ?deleted=true, or always with anyDeleted).
func (r *Registry) versionEndpoint(anyDeleted bool, answer func(st *state, v *schemaValue) any) endpointFunc {
	return func(_ http.ResponseWriter, req *http.Request) (int, any, error) {
		ctx, cancel := r.requestCtx(req)
		defer cancel()
		var out any
		err := r.view(ctx, func(st *state) error {
			v, err := st.lookupVersion(req.PathValue("subject"), req.PathValue("version"), anyDeleted || boolParam(req, "deleted"))
			if err == nil {
				out = answer(st, v)
			}
			return err
		})
		return http.StatusOK, out, err
	}
}

// registerResponse is Confluent's answer to a registration.
type registerResponse struct {
	ID int `json:"id"`
}

func (r *Registry) registerSchema(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	subject := req.PathValue("subject")
	if strings.TrimSpace(subject) == "" || strings.ContainsRune(subject, 0) {
		return 0, nil, errInvalidSubject(subject)
	}
	var body registerRequest
	if err := decodeBody(req, &body); err != nil {
		return 0, nil, err
	}
	v, err := r.register(ctx, subject, body, boolParam(req, "normalize"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, registerResponse{ID: v.ID}, nil
}

// lookupSchema is POST /subjects/{subject}: the version of subject that
// has this schema.
func (r *Registry) lookupSchema(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	subject := req.PathValue("subject")
	var body registerRequest
	if err := decodeBody(req, &body); err != nil {
		return 0, nil, err
	}
	var out schemaResponse
	err := r.view(ctx, func(st *state) error {
		deleted := boolParam(req, "deleted")
		vs := st.versions(subject, deleted)
		if len(vs) == 0 {
			return errSubjectNotFound(subject)
		}
		c, err := prepare(st, body, boolParam(req, "normalize") || st.normalizeDefault(subject))
		if err != nil {
			return err
		}
		key := c.contentKey()
		raw := contentKey(c.typ, c.parsed.canonical(), c.refs)
		for i := len(vs) - 1; i >= 0; i-- {
			if k := vs[i].contentKey(); k == key || k == raw {
				out = toResponse(vs[i])
				return nil
			}
		}
		return errSchemaNotFound()
	})
	return http.StatusOK, out, err
}

func (r *Registry) deleteVersionHandler(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	n, err := r.deleteVersion(ctx, req.PathValue("subject"), req.PathValue("version"), boolParam(req, "permanent"))
	return http.StatusOK, n, err
}

func (r *Registry) deleteSubjectHandler(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	vs, err := r.deleteSubject(ctx, req.PathValue("subject"), boolParam(req, "permanent"))
	return http.StatusOK, vs, err
}

// compatibilityResponse is Confluent's CompatibilityCheckResponse;
// messages only with verbose=true.
type compatibilityResponse struct {
	IsCompatible bool     `json:"is_compatible"`
	Messages     []string `json:"messages,omitempty"`
}

// checkCompatibilityHandler tests a schema against one version of a
// subject (or, without a version, the versions its level checks).
func (r *Registry) checkCompatibilityHandler(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	subject, versionArg := req.PathValue("subject"), req.PathValue("version")
	if versionArg != "" {
		if _, err := parseVersion(versionArg); err != nil {
			return 0, nil, err
		}
	}
	var body registerRequest
	if err := decodeBody(req, &body); err != nil {
		return 0, nil, err
	}
	var msgs []string
	err := r.view(ctx, func(st *state) error {
		c, err := prepare(st, body, boolParam(req, "normalize"))
		if err != nil {
			return err
		}
		level := st.compatibility(subject)
		prev := previousVersions(st, subject, level)
		if versionArg != "" {
			v, err := st.lookupVersion(subject, versionArg, false)
			if err != nil {
				if n, _ := parseVersion(versionArg); n == -1 {
					return nil // no versions: anything is compatible
				}
				return err
			}
			prev = prev[:0]
			if ps, err := parseStored(st, v); err == nil {
				prev = append(prev, previousVersion{version: v.Version, text: v.Schema, schema: ps})
			}
		}
		msgs = checkCompatibility(level, c.parsed, prev)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	out := compatibilityResponse{IsCompatible: len(msgs) == 0}
	if boolParam(req, "verbose") {
		out.Messages = append([]string{}, msgs...)
		if out.Messages == nil {
			out.Messages = []string{}
		}
	}
	return http.StatusOK, verboseResponse(out, boolParam(req, "verbose")), nil
}

// verboseResponse keeps "messages": [] in a verbose answer (omitempty
// would drop it).
func verboseResponse(c compatibilityResponse, verbose bool) any {
	if !verbose {
		return c
	}
	return struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages"`
	}{c.IsCompatible, c.Messages}
}

// atoiID parses a schema id path segment.
func atoiID(s string) (int, error) {
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil || id < 0 {
		return 0, errHTTP(http.StatusNotFound, "HTTP 404 Not Found")
	}
	return int(id), nil
}
