package schemaregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// registerRequest is the body of POST /subjects/{subject}/versions (and of
// the lookup and compatibility endpoints): Confluent's
// RegisterSchemaRequest. id and version are for IMPORT mode.
type registerRequest struct {
	Schema     string          `json:"schema"`
	SchemaType string          `json:"schemaType"`
	References []Reference     `json:"references"`
	ID         int             `json:"id"`
	Version    int             `json:"version"`
	Metadata   json.RawMessage `json:"metadata"`
	RuleSet    json.RawMessage `json:"ruleSet"`
}

// candidate is a request's schema, parsed, as it would be stored.
type candidate struct {
	typ    string
	text   string
	refs   []Reference // versions resolved
	parsed parsedSchema
}

func (c candidate) contentKey() string { return contentKey(c.typ, c.text, c.refs) }

// prepare parses a request's schema against st (its references).
func prepare(st *state, req registerRequest, normalize bool) (candidate, error) {
	typ, err := normalizeType(req.SchemaType)
	if err != nil {
		return candidate{}, errInvalidSchema(err)
	}
	refs, srcs, err := st.resolveRefs(req.References)
	if err != nil {
		return candidate{}, errInvalidSchema(err)
	}
	ps, err := parseSchema(typ, req.Schema, srcs)
	if err != nil {
		return candidate{}, errInvalidSchema(err)
	}
	text := ps.canonical()
	if normalize {
		text = ps.normalized()
	}
	return candidate{typ: typ, text: text, refs: refs, parsed: ps}, nil
}

// parseStored parses a stored version (for compatibility checks).
func parseStored(st *state, v *schemaValue) (parsedSchema, error) {
	_, srcs, err := st.resolveRefs(v.References)
	if err != nil {
		return nil, err
	}
	return parseSchema(v.SchemaType, v.Schema, srcs)
}

// previousVersions parses the live versions of subject that a check at
// level compares with (all for a _TRANSITIVE level, the latest otherwise,
// none for NONE), ascending; a version that no longer parses (its
// reference was deleted) is left out.
func previousVersions(st *state, subject, level string) []previousVersion {
	var out []previousVersion
	vs := st.versions(subject, false)
	switch {
	case level == levelNone:
		vs = nil
	case !strings.HasSuffix(level, "_TRANSITIVE") && len(vs) > 1:
		vs = vs[len(vs)-1:]
	}
	for _, v := range vs {
		ps, err := parseStored(st, v)
		if err != nil {
			continue
		}
		out = append(out, previousVersion{version: v.Version, text: v.Schema, schema: ps})
	}
	return out
}

// register registers req under subject and returns the stored version:
// the existing one when the subject already has this schema, else a new
// version with the schema's id (the id it has under any subject, or the
// next one). It checks the subject's compatibility level, except in IMPORT
// mode, where req may name the id and version.
func (r *Registry) register(ctx context.Context, subject string, req registerRequest, normalize bool) (*schemaValue, error) {
	res, err := r.write(ctx, func(st *state) (plan, error) {
		// Confluent's checkRegisterMode: an id only in IMPORT mode, none
		// only in READWRITE mode.
		mode := st.mode(subject)
		switch {
		case mode == modeReadOnly:
			return plan{}, errReadOnly(subject)
		case req.ID > 0 && mode != modeImport:
			return plan{}, errNotPermitted(fmt.Sprintf("Subject %s in context . is not in import mode", subject))
		case req.ID <= 0 && mode != modeReadWrite:
			return plan{}, errNotPermitted(fmt.Sprintf("Subject %s in context . is not in read-write mode", subject))
		}
		c, err := prepare(st, req, normalize || st.normalizeDefault(subject))
		if err != nil {
			return plan{}, err
		}
		key := c.contentKey()
		for _, v := range st.versions(subject, false) {
			if v.contentKey() == key && (req.ID <= 0 || req.ID == v.ID) {
				cp := *v // the state's own may change once unlocked
				return plan{result: &cp}, nil
			}
		}
		if mode != modeImport {
			level := st.compatibility(subject)
			if msgs := checkCompatibility(level, c.parsed, previousVersions(st, subject, level)); len(msgs) > 0 {
				return plan{}, errIncompatible(subject, msgs)
			}
		}
		id, ok := st.byContent[key]
		if req.ID > 0 {
			if prev := st.byID[req.ID]; prev != nil && prev.contentKey() != key {
				return plan{}, errNotPermitted(fmt.Sprintf("Overwrite new schema with id %d is not permitted.", req.ID))
			}
			id = req.ID
		} else if !ok || st.schemaByID(id) == nil {
			id = st.maxID + 1
		}
		version := st.nextVersion(subject)
		if req.Version > 0 && req.Version != version && mode != modeImport {
			return plan{}, errInvalidSchema(errors.New("Version is not one more than previous version"))
		}
		if req.Version > 0 {
			if old := st.subjects[subject][req.Version]; old != nil && old.ID != id {
				return plan{}, errNotPermitted(fmt.Sprintf("Overwrite new schema with version %d of subject %s is not permitted.", req.Version, subject))
			}
			version = req.Version
		}
		v := &schemaValue{Subject: subject, Version: version, ID: id, SchemaType: c.typ, References: c.refs,
			Metadata: req.Metadata, RuleSet: req.RuleSet, Schema: c.text}
		return plan{
			records: []*kgo.Record{{Key: encodeKey(schemaKey(subject, version)), Value: encodeSchemaValue(*v)}},
			result:  v,
			check: func(st *state) bool {
				got := st.subjects[subject][version]
				return got != nil && got.ID == id && got.contentKey() == key
			},
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return res.(*schemaValue), nil
}

// deleteVersion soft-deletes (or, once soft-deleted, with permanent
// removes) one version and returns its number.
func (r *Registry) deleteVersion(ctx context.Context, subject, versionArg string, permanent bool) (int, error) {
	res, err := r.write(ctx, func(st *state) (plan, error) {
		if st.mode(subject) == modeReadOnly {
			return plan{}, errReadOnly(subject)
		}
		v, err := st.lookupVersion(subject, versionArg, true)
		if err != nil {
			return plan{}, err
		}
		n := v.Version
		if !permanent {
			if v.Deleted {
				return plan{}, errVersionSoftDeleted(subject, n)
			}
			if len(st.referencedBy(subject, n, false)) > 0 {
				return plan{}, errReferenceExists(subject, n)
			}
			d := *v
			d.Deleted = true
			return plan{
				records: []*kgo.Record{{Key: encodeKey(schemaKey(subject, n)), Value: encodeSchemaValue(d)}},
				result:  n,
				check:   func(st *state) bool { got := st.subjects[subject][n]; return got != nil && got.Deleted },
			}, nil
		}
		if !v.Deleted {
			return plan{}, errVersionNotSoftDeleted(subject, n)
		}
		if len(st.referencedBy(subject, n, true)) > 0 {
			return plan{}, errReferenceExists(subject, n)
		}
		recs := []*kgo.Record{{Key: encodeKey(schemaKey(subject, n))}}
		if len(st.subjects[subject]) == 1 {
			recs = append(recs, subjectSettingTombstones(st, subject)...)
		}
		return plan{records: recs, result: n, check: func(st *state) bool { return st.subjects[subject][n] == nil }}, nil
	})
	if err != nil {
		return 0, err
	}
	return res.(int), nil
}

// subjectSettingTombstones deletes a subject's own config and mode, as
// Confluent does when its last version is permanently deleted.
func subjectSettingTombstones(st *state, subject string) []*kgo.Record {
	var recs []*kgo.Record
	if _, ok := st.configs[subject]; ok {
		recs = append(recs, &kgo.Record{Key: encodeKey(subjectKey(keyConfig, subject))})
	}
	if _, ok := st.modes[subject]; ok {
		recs = append(recs, &kgo.Record{Key: encodeKey(subjectKey(keyMode, subject))})
	}
	return recs
}

// deleteSubject soft-deletes every live version of subject (a
// DELETE_SUBJECT record), or with permanent removes every version (all
// soft-deleted first), and returns the versions.
func (r *Registry) deleteSubject(ctx context.Context, subject string, permanent bool) ([]int, error) {
	res, err := r.write(ctx, func(st *state) (plan, error) {
		if st.mode(subject) == modeReadOnly {
			return plan{}, errReadOnly(subject)
		}
		all := st.versions(subject, true)
		if len(all) == 0 {
			return plan{}, errSubjectNotFound(subject)
		}
		live := st.versions(subject, false)
		if !permanent && len(live) == 0 {
			return plan{}, errSubjectSoftDeleted(subject)
		}
		if permanent && len(live) > 0 {
			return plan{}, errSubjectNotSoftDeleted(subject)
		}
		target := live
		if permanent {
			target = all
		}
		versions := []int{}
		for _, v := range target {
			for _, id := range st.referencedBy(v.Subject, v.Version, permanent) {
				if slices.ContainsFunc(st.usesOf(id, permanent), func(u *schemaValue) bool { return u.Subject != subject }) {
					return plan{}, errReferenceExists(subject, v.Version)
				}
			}
			versions = append(versions, v.Version)
		}
		if !permanent {
			last := versions[len(versions)-1]
			return plan{
				records: []*kgo.Record{{Key: encodeKey(subjectKey(keyDeleteSubj, subject)), Value: encodeValue(deleteSubjectValue{Subject: subject, Version: last})}},
				result:  versions,
				check:   func(st *state) bool { return len(st.versions(subject, false)) == 0 },
			}, nil
		}
		var recs []*kgo.Record
		for i := len(versions) - 1; i >= 0; i-- { // newest first: references within the subject
			recs = append(recs, &kgo.Record{Key: encodeKey(schemaKey(subject, versions[i]))})
		}
		recs = append(recs, subjectSettingTombstones(st, subject)...)
		return plan{records: recs, result: versions, check: func(st *state) bool { return len(st.subjects[subject]) == 0 }}, nil
	})
	if err != nil {
		return nil, err
	}
	return res.([]int), nil
}

// configRequest is PUT /config's body (ConfigUpdateRequest).
// compatibilityLevel is accepted for compatibility too (it is the name
// GET /config answers with); the answer uses compatibility.
type configRequest struct {
	Compatibility      *string `json:"compatibility,omitempty"`
	CompatibilityLevel *string `json:"compatibilityLevel,omitempty"`
	Normalize          *bool   `json:"normalize,omitempty"`
}

// setConfig writes subject's (or, for "", the global) config.
func (r *Registry) setConfig(ctx context.Context, subject string, req configRequest) (configRequest, error) {
	var level string
	if req.Compatibility == nil {
		req.Compatibility, req.CompatibilityLevel = req.CompatibilityLevel, nil
	}
	req.CompatibilityLevel = nil
	if req.Compatibility != nil {
		l, ok := parseLevel(*req.Compatibility)
		if !ok {
			return req, errInvalidCompatibility()
		}
		level = l
	}
	_, err := r.write(ctx, func(st *state) (plan, error) {
		if st.mode(subject) == modeReadOnly {
			return plan{}, errReadOnly(subject)
		}
		v := st.configs[subject]
		v.Subject = subject
		if level != "" {
			v.CompatibilityLevel = level
		}
		if req.Normalize != nil {
			v.Normalize = req.Normalize
		}
		return plan{records: []*kgo.Record{{Key: encodeKey(subjectKey(keyConfig, subject)), Value: encodeValue(v)}}}, nil
	})
	if level != "" {
		req.Compatibility = &level
	}
	return req, err
}

// deleteConfig removes subject's (or the global) config and returns what
// it was; a subject without one is 40401.
func (r *Registry) deleteConfig(ctx context.Context, subject string) (configValue, error) {
	res, err := r.write(ctx, func(st *state) (plan, error) {
		if st.mode(subject) == modeReadOnly {
			return plan{}, errReadOnly(subject)
		}
		old, ok := st.configs[subject]
		if !ok && subject != "" {
			return plan{}, errSubjectNotFound(subject)
		}
		if subject == "" && old.CompatibilityLevel == "" {
			old.CompatibilityLevel = levelBackward
		}
		old.Subject = ""
		if !ok {
			return plan{result: old}, nil
		}
		return plan{records: []*kgo.Record{{Key: encodeKey(subjectKey(keyConfig, subject))}}, result: old}, nil
	})
	if err != nil {
		return configValue{}, err
	}
	return res.(configValue), nil
}

// setMode writes subject's (or the global) mode. IMPORT is refused while
// the scope has live schemas unless force.
func (r *Registry) setMode(ctx context.Context, subject, mode string, force bool) error {
	_, err := r.write(ctx, func(st *state) (plan, error) {
		var recs []*kgo.Record
		if mode == modeImport && st.mode(subject) != modeImport && !force {
			if subject == "" && len(st.subjectNames("", false)) > 0 || subject != "" && len(st.versions(subject, false)) > 0 {
				return plan{}, errNotPermitted("Cannot import since found existing subjects")
			}
			if subject != "" && len(st.subjects[subject]) > 0 {
				// Soft-deleted versions go for good, then the subject is
				// cleared from memory (Confluent's CLEAR_SUBJECT).
				for _, v := range st.versions(subject, true) {
					if len(st.referencedBy(subject, v.Version, true)) > 0 {
						return plan{}, errReferenceExists(subject, v.Version)
					}
					recs = append(recs, &kgo.Record{Key: encodeKey(schemaKey(subject, v.Version))})
				}
				recs = append(recs, &kgo.Record{Key: encodeKey(subjectKey(keyClearSubject, subject)), Value: encodeValue(clearSubjectValue{Subject: subject})})
			}
		}
		recs = append(recs, &kgo.Record{Key: encodeKey(subjectKey(keyMode, subject)), Value: encodeValue(modeValue{Subject: subject, Mode: mode})})
		return plan{records: recs}, nil
	})
	return err
}

// deleteMode removes subject's mode and returns what it was; a subject
// without one is 40401.
func (r *Registry) deleteMode(ctx context.Context, subject string) (string, error) {
	res, err := r.write(ctx, func(st *state) (plan, error) {
		old, ok := st.modes[subject]
		if !ok {
			return plan{}, errSubjectNotFound(subject)
		}
		return plan{records: []*kgo.Record{{Key: encodeKey(subjectKey(keyMode, subject))}}, result: old}, nil
	})
	if err != nil {
		return "", err
	}
	return res.(string), nil
}
