// Package console is the broker's built-in web console, served at / by the
// broker's HTTP listener (broker/httpserver): pages for brokers, topics,
// consumer groups, transactions, Schema Registry subjects and a message
// browser that decodes records carrying a schema id, live throughput from
// the broker's own Prometheus registry, and four actions (create a topic,
// add partitions, delete records, reset a group's offsets).
//
// The console knows no broker room. It is a Kafka client (franz-go's kgo and
// kadm) of the broker's own listener over loopback, so it shows what any
// client sees — cluster-wide state in a cluster — and every action is an
// ordinary Kafka request that passes the same checks (and authorizer) as a
// request of kafka-topics.sh or kafka-consumer-groups.sh.
//
// Pages are server-rendered html/template with a little JavaScript (the
// throughput panel and confirmation dialogs), all embedded: no CDN, it works
// offline. Every action is a POST that carries the console's CSRF token and
// an explicit confirmation (a confirm page rendered by the first POST).
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

//go:embed web
var webFS embed.FS

// Config is what the console needs from the broker.
type Config struct {
	// Bootstrap returns the listener of this broker the console connects
	// to, or why there is none yet (listeners not open) or at all.
	Bootstrap func() (Endpoint, error)
	// Metrics is the broker's registry, read for the throughput panel;
	// nil: no panel.
	Metrics prometheus.Gatherer
	// RestProxy returns the base URL of the broker's REST proxy and
	// whether it asks for a login, for the topic page's curl line; nil or
	// "": no proxy.
	RestProxy func() (base string, login bool)
	// SchemaRegistry returns the base URL of the broker's Schema Registry
	// for the Schemas pages and the message browser's decoding; nil or
	// "": none.
	SchemaRegistry func() string
	// Timeout bounds the Kafka requests of one page (default 10 s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Endpoint is a Kafka listener of the broker as the console dials it.
type Endpoint struct {
	Addr string // host:port
	// SASL logs the console in (a SASL_PLAINTEXT listener); nil: none
	// (PLAINTEXT).
	SASL sasl.Mechanism
}

func (e Endpoint) opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(e.Addr)}
	if e.SASL != nil {
		opts = append(opts, kgo.SASL(e.SASL))
	}
	return opts
}

// Console serves the pages. Its Kafka client is created at the first page
// that needs it (the Kafka listeners open after the HTTP listener) and
// closed by Close.
type Console struct {
	cfg   Config
	log   *slog.Logger
	csrf  string
	pages map[string]*template.Template
	mux   *http.ServeMux
	// stopped is cancelled (stop) by Close: pages in flight (a browse's consumer
	// among them) stop their Kafka requests.
	stopped context.Context
	stop    context.CancelFunc

	mu struct {
		sync.Mutex
		seed   Endpoint
		cl     *kgo.Client
		closed bool
	}
}

// New returns a console; Handler serves it.
func New(cfg Config) (*Console, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("console: CSRF token: %w", err)
	}
	c := &Console{cfg: cfg, log: cfg.Logger, csrf: hex.EncodeToString(tok[:])}
	c.stopped, c.stop = context.WithCancel(context.Background())
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	c.mux = c.routes()
	return c, nil
}

// Handler serves the console (mount it at /).
func (c *Console) Handler() http.Handler { return c.mux }

// Close closes the Kafka client. Pages served after Close show an error.
func (c *Console) Close() {
	c.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.closed = true
	if c.mu.cl != nil {
		c.mu.cl.Close()
		c.mu.cl = nil
	}
}

var errClosed = errors.New("console closed: the broker is shutting down")

// admin returns the shared Kafka client, creating it on first use, or
// again if the listener changed (a restart of the listeners).
func (c *Console) admin() (*kadm.Client, Endpoint, error) {
	seed, err := c.cfg.Bootstrap()
	if err != nil {
		return nil, seed, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, seed, errClosed
	}
	if c.mu.cl != nil && c.mu.seed != seed {
		c.mu.cl.Close()
		c.mu.cl = nil
	}
	if c.mu.cl == nil {
		cl, err := kgo.NewClient(append(seed.opts(), kgo.ClientID("kbroker-console"),
			// Pages show what is there now: kadm answers Metadata from
			// the client's cache only for this long (default 5 s).
			kgo.MetadataMinAge(100*time.Millisecond))...)
		if err != nil {
			return nil, seed, fmt.Errorf("console: kafka client for %s: %w", seed.Addr, err)
		}
		c.mu.cl, c.mu.seed = cl, seed
	}
	return kadm.NewClient(c.mu.cl), seed, nil
}

// ctx bounds the Kafka requests of one page: the request's context, the
// timeout, and Close.
func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
	stop := context.AfterFunc(c.stopped, cancel)
	return ctx, func() { stop(); cancel() }
}

func (c *Console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", c.overview)
	mux.HandleFunc("GET /topics", c.topics)
	mux.HandleFunc("GET /topics/{topic}", c.topic)
	mux.HandleFunc("GET /groups", c.groups)
	mux.HandleFunc("GET /groups/{group}", c.group)
	mux.HandleFunc("GET /transactions", c.transactions)
	mux.HandleFunc("GET /messages", c.messages)
	mux.HandleFunc("GET /schemas", c.schemas)
	mux.HandleFunc("GET /schemas/{subject}", c.subject)
	mux.HandleFunc("POST /schemas/{subject}/test", c.testCompatibility)
	mux.HandleFunc("GET /api/throughput", c.throughput)
	for name, a := range actions {
		mux.HandleFunc("POST /actions/"+name, c.action(name, a))
	}
	return mux
}

// page is what every template receives.
type page struct {
	Title  string
	Nav    string // the highlighted menu entry
	CSRF   string
	Error  string // shown above the content
	Notice string
	Data   any
}

// render writes a page; err (a failed Kafka request) is shown above
// whatever data there is, with status 502 when there is no data at all.
func (c *Console) render(w http.ResponseWriter, name, title string, data any, err error) {
	code := http.StatusOK
	if err != nil && data == nil {
		code = http.StatusBadGateway
	}
	c.renderCode(w, code, name, title, data, err)
}

// renderCode is render with the given status.
func (c *Console) renderCode(w http.ResponseWriter, code int, name, title string, data any, err error) {
	t, ok := c.pages[name]
	if !ok {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	p := page{Title: title, Nav: name, CSRF: c.csrf, Data: data}
	if err != nil {
		p.Error = err.Error()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	if err := t.ExecuteTemplate(w, "layout", p); err != nil {
		c.log.Warn("console: rendering page", "page", name, "err", err)
	}
}

// checkCSRF refuses a POST that does not carry the console's token, or
// whose Origin (when the browser sends one) is not this host: another site
// cannot read the token from our pages, so it cannot forge an action.
func (c *Console) checkCSRF(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("origin %q is not this console (%s)", o, r.Host)
		}
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(c.csrf)) != 1 {
		return errors.New("missing or wrong CSRF token: reload the page and try again")
	}
	return nil
}

func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(webFS, "web/*.html")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*template.Template)
	for _, n := range names {
		base := n[len("web/") : len(n)-len(".html")]
		if base == "layout" {
			continue
		}
		t, err := template.New("").Funcs(funcs).ParseFS(webFS, "web/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		out[base] = t
	}
	return out, nil
}

var funcs = template.FuncMap{
	"bytes": humanBytes,
	// path escapes a name for one path segment (a group may be "a/b?").
	"path": url.PathEscape,
	"ms": func(ms int64) string {
		if ms <= 0 {
			return "-"
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
	},
}

// humanBytes is a size as 1.5 MiB.
func humanBytes(n int64) string {
	if n < 0 {
		return "-"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
