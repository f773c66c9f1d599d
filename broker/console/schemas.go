package console

// The Schemas pages: the subjects of the Schema Registry
// (Config.SchemaRegistry, the broker's own), a subject's versions with a
// diff between two of them, its compatibility level, and a box that tests
// a schema's compatibility; and the message browser's decoding of keys and
// values that carry a schema id. The registry is asked over HTTP with the
// page's own Basic login, if any, as a Schema Registry client would be.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kbroker/kbroker/schemaregistry/codec"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/twmb/franz-go/pkg/sr"
)

// maxSubjectsShown bounds the subjects listed (each costs one request).
const maxSubjectsShown = 500

var errNoRegistry = errors.New("this broker serves no Schema Registry (schema.registry.listeners)")

// registry is the Schema Registry as the page's user sees it.
func (c *Console) registry(r *http.Request) (*sr.Client, error) {
	if c.cfg.SchemaRegistry == nil {
		return nil, errNoRegistry
	}
	url := c.cfg.SchemaRegistry()
	if url == "" {
		return nil, errNoRegistry
	}
	opts := []sr.ClientOpt{sr.URLs(url), sr.UserAgent("kbroker-console")}
	if user, pass, ok := r.BasicAuth(); ok {
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	return sr.NewClient(opts...)
}

// subjectRow is one subject of the list.
type subjectRow struct {
	Subject       string
	Latest, ID    int
	Type          string
	Compatibility string
	Err           string
}

type schemasData struct {
	Subjects []subjectRow
	Global   string // the global compatibility level
	More     int    // subjects not listed
}

func (c *Console) schemas(w http.ResponseWriter, r *http.Request) {
	reg, err := c.registry(r)
	if err != nil {
		c.render(w, "schemas", "Schemas", nil, err)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	subjects, err := reg.Subjects(ctx)
	if err != nil {
		c.render(w, "schemas", "Schemas", nil, err)
		return
	}
	d := schemasData{Subjects: []subjectRow{}}
	if res := reg.Compatibility(ctx); len(res) == 1 && res[0].Err == nil {
		d.Global = res[0].Level.String()
	}
	slices.Sort(subjects)
	if len(subjects) > maxSubjectsShown {
		d.More, subjects = len(subjects)-maxSubjectsShown, subjects[:maxSubjectsShown]
	}
	for _, s := range subjects {
		row := subjectRow{Subject: s}
		if ss, err := reg.SchemaByVersion(ctx, s, -1); err != nil {
			row.Err = err.Error()
		} else {
			row.Latest, row.ID, row.Type = ss.Version, ss.ID, ss.Type.String()
		}
		row.Compatibility = subjectCompatibility(ctx, reg, s, d.Global)
		d.Subjects = append(d.Subjects, row)
	}
	c.render(w, "schemas", "Schemas", d, nil)
}

// subjectCompatibility is subject's level, or the global one (marked).
func subjectCompatibility(ctx context.Context, reg *sr.Client, subject, global string) string {
	if res := reg.Compatibility(ctx, subject); len(res) == 1 && res[0].Err == nil {
		return res[0].Level.String()
	}
	return global + " (global)"
}

// versionView is one version of a subject.
type versionView struct {
	Version, ID int
	Type        string
	Text        string // pretty-printed where it is JSON
	References  []sr.SchemaReference
}

type subjectData struct {
	Subject       string
	Versions      []int
	Shown         versionView
	Compatibility string
	DiffWith      int    // the version the diff is against (0: none)
	Diff          string // unified diff from DiffWith to Shown
	Test          *compatTest
}

// compatTest is the test box's last answer.
type compatTest struct {
	Schema, Type string
	Compatible   bool
	Messages     []string
	Err          string
}

func (c *Console) subject(w http.ResponseWriter, r *http.Request) {
	c.renderSubject(w, r, nil)
}

func (c *Console) renderSubject(w http.ResponseWriter, r *http.Request, test *compatTest) {
	subject := r.PathValue("subject")
	reg, err := c.registry(r)
	if err != nil {
		c.render(w, "subject", subject, nil, err)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	d := subjectData{Subject: subject, Test: test}
	if d.Versions, err = reg.SubjectVersions(ctx, subject); err != nil {
		c.render(w, "subject", subject, nil, err)
		return
	}
	version := d.Versions[len(d.Versions)-1]
	var formErr error
	if s := r.FormValue("version"); s != "" {
		if version, err = strconv.Atoi(s); err != nil {
			formErr = fmt.Errorf("version %q is not a number", s)
			version = d.Versions[len(d.Versions)-1]
		}
	}
	if d.Shown, err = versionOf(ctx, reg, subject, version); err != nil {
		c.render(w, "subject", subject, nil, err)
		return
	}
	if s := r.FormValue("diff"); s != "" {
		other, err := strconv.Atoi(s)
		if err != nil {
			formErr = fmt.Errorf("diff %q is not a version number", s)
		} else if old, err := versionOf(ctx, reg, subject, other); err != nil {
			formErr = err
		} else {
			d.DiffWith = other
			d.Diff, _ = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
				A: difflib.SplitLines(old.Text + "\n"), B: difflib.SplitLines(d.Shown.Text + "\n"),
				FromFile: fmt.Sprintf("version %d", other), ToFile: fmt.Sprintf("version %d", version), Context: 3,
			})
		}
	}
	global := ""
	if res := reg.Compatibility(ctx); len(res) == 1 && res[0].Err == nil {
		global = res[0].Level.String()
	}
	d.Compatibility = subjectCompatibility(ctx, reg, subject, global)
	c.render(w, "subject", subject, d, formErr)
}

// versionOf reads one version of subject.
func versionOf(ctx context.Context, reg *sr.Client, subject string, version int) (versionView, error) {
	ss, err := reg.SchemaByVersion(ctx, subject, version)
	if err != nil {
		return versionView{}, err
	}
	v := versionView{Version: ss.Version, ID: ss.ID, Type: ss.Type.String(), Text: ss.Schema.Schema, References: ss.References}
	var out bytes.Buffer
	if ss.Type != sr.TypeProtobuf && json.Indent(&out, []byte(v.Text), "", "  ") == nil {
		v.Text = out.String()
	}
	return v, nil
}

// testCompatibility answers the test box: is the posted schema compatible
// with the subject's latest version, and if not, why (verbose).
func (c *Console) testCompatibility(w http.ResponseWriter, r *http.Request) {
	if err := c.checkCSRF(w, r); err != nil {
		c.renderCode(w, http.StatusForbidden, "subject", r.PathValue("subject"), nil, err)
		return
	}
	test := &compatTest{Schema: r.PostFormValue("schema"), Type: r.PostFormValue("type")}
	reg, err := c.registry(r)
	if err != nil {
		c.render(w, "subject", r.PathValue("subject"), nil, err)
		return
	}
	var typ sr.SchemaType
	if err := typ.UnmarshalText([]byte(strings.ToUpper(cmpOr(test.Type, "AVRO")))); err != nil {
		test.Err = err.Error()
		c.renderSubject(w, r, test)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	res, err := reg.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), r.PathValue("subject"), -1, sr.Schema{Schema: test.Schema, Type: typ})
	if err != nil {
		test.Err = err.Error()
	} else {
		test.Compatible, test.Messages = res.Is, res.Messages
	}
	c.renderSubject(w, r, test)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// decoder decodes the message browser's keys and values that carry a
// schema id, with codecs cached by id (an id names one schema for ever).
type decoder struct {
	reg *sr.Client
	mu  sync.Mutex
	m   map[int]codec.Codec
	bad map[int]error
}

// maxDecoderIDs bounds the codecs a decoder keeps.
const maxDecoderIDs = 1000

func (c *Console) decoder(r *http.Request) *decoder {
	reg, err := c.registry(r)
	if err != nil {
		return nil
	}
	return &decoder{reg: reg, m: map[int]codec.Codec{}, bad: map[int]error{}}
}

// view replaces v by its decoding when it carries a schema id the
// registry knows and its schema decodes it.
func (d *decoder) view(ctx context.Context, v *valueView) {
	if text, id, ok := d.decode(ctx, v.raw); ok {
		v.Kind, v.Text, v.SchemaID, v.Cut = "schema", text, id, 0
		if len(v.Text) > maxShown*2 {
			v.Cut = len(v.Text) - maxShown*2
			v.Text = v.Text[:maxShown*2]
		}
	}
}

// decode returns b's JSON and schema id when b is in the registry's wire
// format and its schema decodes it; ok is false otherwise.
func (d *decoder) decode(ctx context.Context, b []byte) (text string, id int, ok bool) {
	if d == nil || len(b) < 5 || b[0] != 0 {
		return "", 0, false
	}
	id = int(int32(binary.BigEndian.Uint32(b[1:5])))
	d.mu.Lock()
	cd, known := d.m[id]
	_, failed := d.bad[id]
	d.mu.Unlock()
	if failed {
		return "", 0, false
	}
	if !known {
		var err error
		if cd, err = d.codec(ctx, id); err != nil {
			d.mu.Lock()
			if len(d.bad) < maxDecoderIDs {
				d.bad[id] = err
			}
			d.mu.Unlock()
			return "", 0, false
		}
		d.mu.Lock()
		if len(d.m) < maxDecoderIDs {
			d.m[id] = cd
		}
		d.mu.Unlock()
	}
	j, err := cd.Decode(b[5:])
	if err != nil {
		return "", 0, false
	}
	var out bytes.Buffer
	if json.Indent(&out, j, "", "  ") != nil {
		return string(j), id, true
	}
	return out.String(), id, true
}

// codec builds schema id's codec with its references.
func (d *decoder) codec(ctx context.Context, id int) (codec.Codec, error) {
	s, err := d.reg.SchemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	refs, err := codec.ResolveRefs(srRefs(s.References), srFetch(ctx, d.reg))
	if err != nil {
		return nil, err
	}
	return codec.New(s.Type.String(), s.Schema, refs)
}

// srRefs are franz-go's references as codec.ResolveRefs takes them.
func srRefs(refs []sr.SchemaReference) []codec.Reference {
	out := make([]codec.Reference, len(refs))
	for i, r := range refs {
		out[i] = codec.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version}
	}
	return out
}

// srFetch reads a subject version for codec.ResolveRefs.
func srFetch(ctx context.Context, reg *sr.Client) func(string, int) (string, []codec.Reference, error) {
	return func(subject string, version int) (string, []codec.Reference, error) {
		ss, err := reg.SchemaByVersion(ctx, subject, version)
		if err != nil {
			return "", nil, err
		}
		return ss.Schema.Schema, srRefs(ss.References), nil
	}
}
