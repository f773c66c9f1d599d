package schemaregistry

import (
	"context"
	"net/http"
	"sort"
	"strconv"
)

// The /schemas, /config, /mode and metadata endpoints.

// schemaByIDResponse is Confluent's SchemaString.
type schemaByIDResponse struct {
	Subject    string      `json:"subject,omitempty"`
	Version    int         `json:"version,omitempty"`
	SchemaType string      `json:"schemaType,omitempty"`
	Schema     string      `json:"schema"`
	References []Reference `json:"references,omitempty"`
	MaxID      int         `json:"maxId,omitempty"`
}

// schemaForID finds the path's id. With ?subject= (a deserializer's
// subject) it is the version of that subject with the id, or, as
// Confluent falls back to the whole default context, any version with it.
func schemaForID(st *state, req *http.Request) (*schemaValue, error) {
	id, err := atoiID(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	v := st.schemaByID(id)
	if v == nil {
		return nil, errSchemaIDNotFound(id)
	}
	if subject := req.URL.Query().Get("subject"); subject != "" {
		uses := st.usesOf(id, true)
		for _, u := range uses {
			if u.Subject == subject {
				return u, nil
			}
		}
		return uses[0], nil
	}
	return v, nil
}

// idEndpoint serves what answer makes of the schema the path's id names.
func (r *Registry) idEndpoint(answer func(st *state, req *http.Request, v *schemaValue) any) endpointFunc {
	return func(_ http.ResponseWriter, req *http.Request) (int, any, error) {
		ctx, cancel := r.requestCtx(req)
		defer cancel()
		var out any
		err := r.view(ctx, func(st *state) error {
			v, err := schemaForID(st, req)
			if err == nil {
				out = answer(st, req, v)
			}
			return err
		})
		return http.StatusOK, out, err
	}
}

// byIDAnswer is Confluent's SchemaString: with ?subject= it names the
// version found.
func byIDAnswer(st *state, req *http.Request, v *schemaValue) any {
	out := schemaByIDResponse{SchemaType: responseType(v.SchemaType), Schema: v.Schema, References: v.References}
	if req.URL.Query().Get("subject") != "" {
		out.Subject, out.Version = v.Subject, v.Version
	}
	if boolParam(req, "fetchMaxId") {
		out.MaxID = st.maxID
	}
	return out
}

// subjectVersion is Confluent's SubjectVersion.
type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func (r *Registry) usesHandler(req *http.Request, f func([]*schemaValue) any) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	var out any
	err := r.view(ctx, func(st *state) error {
		id, err := atoiID(req.PathValue("id"))
		if err != nil {
			return err
		}
		uses := st.usesOf(id, boolParam(req, "deleted"))
		if len(uses) == 0 {
			return errSchemaIDNotFound(id)
		}
		out = f(uses)
		return nil
	})
	return http.StatusOK, out, err
}

func (r *Registry) getSubjectsByID(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	return r.usesHandler(req, func(uses []*schemaValue) any {
		out := []string{}
		for _, u := range uses {
			if len(out) == 0 || out[len(out)-1] != u.Subject {
				out = append(out, u.Subject)
			}
		}
		return out
	})
}

func (r *Registry) getVersionsByID(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	return r.usesHandler(req, func(uses []*schemaValue) any {
		out := []subjectVersion{}
		for _, u := range uses {
			out = append(out, subjectVersion{u.Subject, u.Version})
		}
		return out
	})
}

// listSchemas is GET /schemas: every version (?deleted=true with the
// soft-deleted ones, ?latestOnly=true only each subject's latest) of the
// subjects starting with ?subjectPrefix, paged by ?offset and ?limit.
func (r *Registry) listSchemas(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	q := req.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	out := []schemaResponse{}
	err := r.view(ctx, func(st *state) error {
		deleted := boolParam(req, "deleted")
		for _, s := range st.subjectNames(q.Get("subjectPrefix"), deleted) {
			vs := st.versions(s, deleted)
			if boolParam(req, "latestOnly") {
				vs = vs[len(vs)-1:]
			}
			for _, v := range vs {
				out = append(out, toResponse(v))
			}
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Subject < out[j].Subject || out[i].Subject == out[j].Subject && out[i].Version < out[j].Version
	})
	if offset > 0 {
		out = out[min(offset, len(out)):]
	}
	if limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	return http.StatusOK, out, err
}

// configResponse is Confluent's Config entity.
type configResponse struct {
	CompatibilityLevel string `json:"compatibilityLevel,omitempty"`
	Normalize          *bool  `json:"normalize,omitempty"`
}

func (r *Registry) getConfig(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	subject := req.PathValue("subject")
	var out configResponse
	err := r.view(ctx, func(st *state) error {
		c, ok := st.configs[subject]
		switch {
		case subject == "" || boolParam(req, "defaultToGlobal"):
			out = configResponse{CompatibilityLevel: st.compatibility(subject), Normalize: c.Normalize}
			if out.Normalize == nil {
				out.Normalize = st.configs[""].Normalize
			}
		case !ok:
			return errSubjectCompatNotConfigured(subject)
		default:
			out = configResponse{CompatibilityLevel: c.CompatibilityLevel, Normalize: c.Normalize}
		}
		return nil
	})
	return http.StatusOK, out, err
}

func (r *Registry) putConfig(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	var body configRequest
	if err := decodeBody(req, &body); err != nil {
		return 0, nil, err
	}
	out, err := r.setConfig(ctx, req.PathValue("subject"), body)
	return http.StatusOK, out, err
}

func (r *Registry) deleteConfigHandler(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	old, err := r.deleteConfig(ctx, req.PathValue("subject"))
	return http.StatusOK, configResponse{CompatibilityLevel: old.CompatibilityLevel, Normalize: old.Normalize}, err
}

// modeBody is Confluent's Mode entity and ModeUpdateRequest.
type modeBody struct {
	Mode string `json:"mode"`
}

func (r *Registry) getMode(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	subject := req.PathValue("subject")
	var out modeBody
	err := r.view(ctx, func(st *state) error {
		m, ok := st.modes[subject]
		switch {
		case subject == "" || boolParam(req, "defaultToGlobal"):
			out.Mode = st.mode(subject)
		case !ok:
			return errSubjectModeNotConfigured(subject)
		default:
			out.Mode = m
		}
		return nil
	})
	return http.StatusOK, out, err
}

func (r *Registry) putMode(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	var body modeBody
	if err := decodeBody(req, &body); err != nil {
		return 0, nil, err
	}
	mode, ok := parseMode(body.Mode)
	if !ok {
		return 0, nil, errInvalidMode()
	}
	if err := r.setMode(ctx, req.PathValue("subject"), mode, boolParam(req, "force")); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, modeBody{Mode: mode}, nil
}

func (r *Registry) deleteModeHandler(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	old, err := r.deleteMode(ctx, req.PathValue("subject"))
	return http.StatusOK, modeBody{Mode: old}, err
}

// clusterIDHandler is GET /v1/metadata/id: Confluent's ServerClusterId,
// the Kafka cluster id from the broker's Metadata.
func (r *Registry) clusterIDHandler(_ http.ResponseWriter, req *http.Request) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	id, err := r.kafkaClusterID(ctx)
	if err != nil {
		return 0, nil, err
	}
	type clusters struct {
		Kafka          string `json:"kafka-cluster"`
		SchemaRegistry string `json:"schema-registry-cluster"`
	}
	type scope struct {
		Path     []string `json:"path"`
		Clusters clusters `json:"clusters"`
	}
	return http.StatusOK, struct {
		Scope scope `json:"scope"`
	}{scope{Path: []string{}, Clusters: clusters{Kafka: id, SchemaRegistry: "schema-registry"}}}, nil
}

func (r *Registry) kafkaClusterID(ctx context.Context) (string, error) {
	if err := r.waitReady(ctx); err != nil {
		return "", err
	}
	r.mu.RLock()
	adm := r.mu.adm
	r.mu.RUnlock()
	if adm == nil {
		return "", errStore("Error reading the cluster id", errNotReady)
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return "", errStore("Error reading the cluster id", err)
	}
	return md.Cluster, nil
}
