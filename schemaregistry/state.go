package schemaregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// state is the registry's view of _schemas: what applying its records in
// offset order gives. It does no I/O; Registry guards it with its lock.
//
// Invariant: an id names one schema (type, text, references) for ever:
// a SCHEMA record that would give a used id to another schema, or give a
// live version of a subject another id, is refused (apply returns an
// error and changes nothing), as Confluent's registry refuses a duplicate
// id when it reads the topic. So two registries writing at once can waste
// a record but never hand out an id or version twice.
type state struct {
	subjects map[string]map[int]*schemaValue // subject → version → record
	byID     map[int]*schemaValue            // id → the first record with it
	// byContent maps a schema's contentKey to its id: registering the same
	// schema again, under any subject, gives the same id.
	byContent map[string]int
	// uses counts the versions (soft-deleted ones included) that have
	// each id: an id is served while some version has it.
	uses    map[int]int
	maxID   int
	configs map[string]configValue // "" is the global config
	modes   map[string]string      // "" is the global mode
}

func newState() *state {
	return &state{
		subjects:  map[string]map[int]*schemaValue{},
		byID:      map[int]*schemaValue{},
		byContent: map[string]int{},
		uses:      map[int]int{},
		configs:   map[string]configValue{},
		modes:     map[string]string{},
	}
}

// contentKey identifies a schema's content: its type, its text as stored
// (canonical) and its references.
func contentKey(typ, schema string, refs []Reference) string {
	var b strings.Builder
	b.WriteString(typ)
	b.WriteByte(0)
	for _, r := range refs {
		fmt.Fprintf(&b, "%s\x01%s\x01%d\x00", r.Name, r.Subject, r.Version)
	}
	b.WriteByte(0)
	b.WriteString(schema)
	return b.String()
}

func (v *schemaValue) contentKey() string { return contentKey(v.SchemaType, v.Schema, v.References) }

// apply applies one record. An error is a record refused (the state is
// unchanged); the caller logs it.
func (s *state) apply(r record) error {
	switch r.key.KeyType {
	case keySchema:
		return s.applySchema(r.key.subject(), r.key.Version, r.schema)
	case keyConfig:
		if r.config == nil {
			delete(s.configs, r.key.subject())
		} else {
			s.configs[r.key.subject()] = *r.config
		}
	case keyMode:
		if r.mode == nil {
			delete(s.modes, r.key.subject())
		} else {
			s.modes[r.key.subject()] = r.mode.Mode
		}
	case keyDeleteSubj:
		if r.delete != nil {
			for v, sv := range s.subjects[r.delete.Subject] {
				if v <= r.delete.Version {
					sv.Deleted = true
				}
			}
		}
	case keyClearSubject:
		if r.clear != nil {
			for v, sv := range s.subjects[r.clear.Subject] {
				if sv.Deleted {
					s.dropVersion(r.clear.Subject, v)
				}
			}
		}
	}
	return nil
}

func (s *state) applySchema(subject string, version int, v *schemaValue) error {
	versions := s.subjects[subject]
	if v == nil { // tombstone: a permanent delete
		s.dropVersion(subject, version)
		return nil
	}
	if first, ok := s.byID[v.ID]; ok && first.contentKey() != v.contentKey() {
		return fmt.Errorf("schema id %d of %s version %d is already the id of another schema (%s version %d); record ignored", v.ID, subject, version, first.Subject, first.Version)
	}
	if old, ok := versions[version]; ok && old.ID != v.ID {
		return fmt.Errorf("%s version %d is already schema id %d, not %d; record ignored", subject, version, old.ID, v.ID)
	}
	if versions == nil {
		versions = map[int]*schemaValue{}
		s.subjects[subject] = versions
	}
	cp := *v
	if versions[version] == nil {
		s.uses[v.ID]++
	}
	versions[version] = &cp
	if _, ok := s.byID[v.ID]; !ok {
		s.byID[v.ID] = &cp
		key := cp.contentKey()
		s.byContent[key] = v.ID
		// A schema another registry (Confluent's) stored in its own
		// printing is found by this registry's too, so registering it
		// again gives its id.
		if alt, ok := s.canonicalKey(&cp); ok && alt != key {
			if _, taken := s.byContent[alt]; !taken {
				s.byContent[alt] = v.ID
			}
		}
	}
	s.maxID = max(s.maxID, v.ID)
	return nil
}

// canonicalKey is the contentKey of v's schema as this registry would
// store it (see parsedSchema.canonical); false if it does not parse.
func (s *state) canonicalKey(v *schemaValue) (string, bool) {
	var text string
	switch v.SchemaType {
	case typeAvro:
		_, srcs, err := s.resolveRefs(v.References)
		if err != nil {
			return "", false
		}
		ps, err := parseSchema(typeAvro, v.Schema, srcs)
		if err != nil {
			return "", false
		}
		text = ps.canonical()
	case typeJSON:
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(v.Schema)); err != nil {
			return "", false
		}
		text = buf.String()
	case typeProtobuf:
		text = strings.TrimSpace(v.Schema)
	default:
		return "", false
	}
	return contentKey(v.SchemaType, text, v.References), true
}

// dropVersion removes a version (a tombstone, a cleared subject).
func (s *state) dropVersion(subject string, version int) {
	old := s.subjects[subject][version]
	if old == nil {
		return
	}
	delete(s.subjects[subject], version)
	if len(s.subjects[subject]) == 0 {
		delete(s.subjects, subject)
	}
	if s.uses[old.ID]--; s.uses[old.ID] <= 0 {
		delete(s.uses, old.ID)
	}
}

// versions returns a subject's versions in ascending order, soft-deleted
// ones only with deleted.
func (s *state) versions(subject string, deleted bool) []*schemaValue {
	var out []*schemaValue
	for _, v := range s.subjects[subject] {
		if deleted || !v.Deleted {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// latest is a subject's highest live version, nil if none.
func (s *state) latest(subject string) *schemaValue {
	vs := s.versions(subject, false)
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

// nextVersion is one more than any version the subject ever had that is
// still in the log, soft-deleted ones included: versions are not reused.
func (s *state) nextVersion(subject string) int {
	n := 1
	for v := range s.subjects[subject] {
		n = max(n, v+1)
	}
	return n
}

// subjectNames lists subjects with a live version (deleted: any version),
// sorted, those starting with prefix.
func (s *state) subjectNames(prefix string, deleted bool) []string {
	out := []string{}
	for name := range s.subjects {
		if strings.HasPrefix(name, prefix) && len(s.versions(name, deleted)) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// usesOf lists the versions (subject, version) that have schema id.
func (s *state) usesOf(id int, deleted bool) []*schemaValue {
	var out []*schemaValue
	for _, versions := range s.subjects {
		for _, v := range versions {
			if v.ID == id && (deleted || !v.Deleted) {
				out = append(out, v)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// schemaByID is the schema with id if some version still has it.
func (s *state) schemaByID(id int) *schemaValue {
	if s.uses[id] == 0 {
		return nil
	}
	return s.byID[id]
}

// referencedBy lists the ids of live schemas that reference subject's
// version (all, soft-deleted included, with deleted).
func (s *state) referencedBy(subject string, version int, deleted bool) []int {
	ids := map[int]bool{}
	for _, versions := range s.subjects {
		for _, v := range versions {
			if !deleted && v.Deleted {
				continue
			}
			for _, r := range v.References {
				if r.Subject == subject && r.Version == version {
					ids[v.ID] = true
				}
			}
		}
	}
	out := []int{}
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// compatibility is the level in force for subject: its own, else the
// global one, else BACKWARD (Confluent's default).
func (s *state) compatibility(subject string) string {
	if c, ok := s.configs[subject]; ok && c.CompatibilityLevel != "" {
		return c.CompatibilityLevel
	}
	if c, ok := s.configs[""]; ok && c.CompatibilityLevel != "" {
		return c.CompatibilityLevel
	}
	return levelBackward
}

// normalizeDefault is the normalize flag in force for subject.
func (s *state) normalizeDefault(subject string) bool {
	for _, k := range []string{subject, ""} {
		if c, ok := s.configs[k]; ok && c.Normalize != nil {
			return *c.Normalize
		}
	}
	return false
}

// mode is the mode in force for subject: its own, else the global one,
// else READWRITE.
func (s *state) mode(subject string) string {
	if m, ok := s.modes[subject]; ok && subject != "" {
		return m
	}
	if m, ok := s.modes[""]; ok {
		return m
	}
	return modeReadWrite
}
