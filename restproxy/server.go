// Package restproxy is the broker's built-in Confluent REST Proxy: the v2
// API (produce, topic and partition metadata, consumer instances) and the
// v3 API (/v3/clusters/...: brokers, topics, configs, partitions, consumer
// groups, ACLs, records), with Confluent's JSON shapes, content types, error
// bodies and codes, so that curl and the REST Proxy's clients work unchanged.
//
// Like the web console, the proxy knows no broker room: it is a Kafka client
// (franz-go's kgo, kadm) of the broker's own listener over loopback, and
// every HTTP call is one or more ordinary Kafka requests. With a login
// (Config.Login, rest.proxy.authentication=basic) every call acts as the
// HTTP Basic user: the proxy's Kafka client for that user logs in over SASL
// with the same credentials, so the authorizer and the quotas see that
// user's principal, as they would a Kafka client's.
//
// A v2 consumer instance is a Kafka client of its own, a real member of its
// group (it rebalances with native members); instances live on the broker
// that created them (a request for one created elsewhere is answered 40403,
// as a REST Proxy that does not know it would), and one unused for
// Config.InstanceTimeout is closed by the proxy's expiry goroutine.
package restproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Content types of replies: v2's own, v3's plain JSON.
const (
	ctV2 = "application/vnd.kafka.v2+json"
	ctV3 = "application/json"
)

// Config is what the proxy needs from the broker.
type Config struct {
	// Bootstrap returns host:port of the broker's Kafka listener the proxy
	// dials, or why there is none (listeners not open yet, or none fits).
	Bootstrap func() (string, error)
	// Login, when set, requires an HTTP Basic login on every call: it
	// checks the password and returns the SASL mechanism that logs the user
	// in to the Bootstrap listener. nil: no login, one shared client.
	Login func(user, password string) (sasl.Mechanism, error)
	// LoginFailureDelay holds the 401 of a wrong login back that long
	// (connection.failed.authentication.delay.ms), so guessing goes slowly.
	LoginFailureDelay time.Duration
	// InstanceTimeout closes a v2 consumer instance unused that long
	// (consumer.instance.timeout.ms; default 5 minutes).
	InstanceTimeout time.Duration
	// MaxRequestBytes bounds a request body (413 beyond; default 16 MiB).
	// It also bounds the max_bytes of a v2 records read.
	MaxRequestBytes int64
	// SchemaRegistry returns the URL of the Schema Registry the schema
	// formats (avro, protobuf, jsonschema) use: Confluent's
	// schema.registry.url, by default the broker's own registry. nil: the
	// schema formats are refused.
	SchemaRegistry func() (string, error)
	// RegistryTLS, when set, is the client TLS configuration of calls to
	// an https:// Schema Registry (nil: the system's roots).
	RegistryTLS *tls.Config
	// RequestTimeout bounds the Kafka requests of one call (default 30 s).
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// login is who a call acts as and how the proxy dials for them.
type login struct {
	user string         // "" without Config.Login
	key  [32]byte       // sha256 of the password: a changed password gets a new client
	mech sasl.Mechanism // nil without Config.Login
	seed string
}

func (l login) opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(l.seed), kgo.ClientID("kbroker-rest-proxy")}
	if l.mech != nil {
		opts = append(opts, kgo.SASL(l.mech))
	}
	return opts
}

// userClient is the shared Kafka client of one login. One unused for
// Config.InstanceTimeout (no call holding it) is closed by the expiry
// goroutine, so the clients of logins that stopped calling do not pile up.
type userClient struct {
	login login
	cl    *kgo.Client
	adm   *kadm.Client

	// busy counts the calls holding the client and lastUsed is the unix
	// nanoseconds of the last one's end; both change under Proxy.mu.
	busy     int
	lastUsed int64
}

// Proxy serves the REST Proxy API. Its Kafka clients are created at the
// first call that needs them and closed by Close.
type Proxy struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux

	// stopped is cancelled by Close: calls in flight and the expiry
	// goroutine stop.
	stopped context.Context
	stop    context.CancelFunc
	expiry  sync.WaitGroup

	instances *instances // v2 consumer instances (v2_consumers.go)

	// registryHTTP and codecs serve the schema formats (schemas.go).
	registryHTTP *http.Client
	codecs       codecCache

	mu struct {
		sync.Mutex
		clients map[string]*userClient // by user
		closed  bool
	}
}

// New returns a proxy and starts its expiry goroutine; Close stops it.
func New(cfg Config) *Proxy {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.InstanceTimeout <= 0 {
		cfg.InstanceTimeout = 5 * time.Minute
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 16 << 20
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	p := &Proxy{cfg: cfg, log: cfg.Logger, instances: newInstances(), registryHTTP: &http.Client{Timeout: cfg.RequestTimeout, Transport: &http.Transport{TLSClientConfig: cfg.RegistryTLS, MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}}}
	p.mu.clients = map[string]*userClient{}
	p.stopped, p.stop = context.WithCancel(context.Background())
	p.mux = http.NewServeMux()
	p.routesV2()
	p.routesV3()
	p.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, ctV2, errNotFound)
	})
	p.expiry.Add(1)
	go p.expireLoop()
	return p
}

// Handler serves the API at /.
func (p *Proxy) Handler() http.Handler { return p.mux }

// Close stops the expiry goroutine, closes every consumer instance (they
// leave their groups) and every Kafka client. Calls after Close are
// answered 50002.
func (p *Proxy) Close() {
	p.stop()
	p.expiry.Wait()
	p.mu.Lock()
	p.mu.closed = true
	clients := p.mu.clients
	p.mu.clients = nil
	p.mu.Unlock()
	for _, in := range p.instances.removeAll() {
		in.close()
	}
	for _, uc := range clients {
		uc.cl.Close()
	}
	p.registryHTTP.CloseIdleConnections()
}

var errClosed = errors.New("the broker is shutting down")

// call is one HTTP call being served.
type call struct {
	ctx   context.Context
	w     http.ResponseWriter
	r     *http.Request
	p     *Proxy
	login login
	uc    *userClient
	reg   *schemaRegistry // the call's registry client, once asked for (schemas.go)
}

// handlerFunc serves one route; an error is answered with Confluent's body.
type handlerFunc func(c *call) error

// handle registers h at pattern; errors are answered as contentType. The
// body must arrive within RequestTimeout (a slow client is cut off), but
// for streamed records.
func (p *Proxy) handle(pattern, contentType string, h handlerFunc) {
	p.handleBody(pattern, contentType, true, h)
}

func (p *Proxy) handleBody(pattern, contentType string, bodyDeadline bool, h handlerFunc) {
	p.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if bodyDeadline {
			// A client that sends its body or reads the reply too slowly
			// does not hold the call's goroutine for longer. (Not every
			// ResponseWriter supports deadlines; the server's does.)
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(p.cfg.RequestTimeout))
			_ = rc.SetWriteDeadline(time.Now().Add(2 * p.cfg.RequestTimeout))
		}
		lg, err := p.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="kbroker"`)
			writeError(w, contentType, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), p.cfg.RequestTimeout)
		defer cancel()
		// kadm's metadata with authorized operations skips kgo's metadata
		// cache: a topic created by one call is listed by the next.
		ctx = kadm.WithAuthorizedOps(ctx)
		stopAfter := context.AfterFunc(p.stopped, cancel)
		defer stopAfter()
		c := &call{ctx: ctx, w: w, r: r, p: p, login: lg}
		defer c.release()
		if err := h(c); err != nil {
			writeError(w, contentType, err)
		}
	})
}

// authenticate checks the Basic login when the proxy has Config.Login.
func (p *Proxy) authenticate(r *http.Request) (login, error) {
	if p.cfg.Login == nil {
		return login{}, nil
	}
	user, password, ok := r.BasicAuth()
	if !ok || user == "" || password == "" {
		return login{}, errUnauthorized
	}
	mech, err := p.cfg.Login(user, password)
	if err != nil {
		p.log.Info("rest proxy authentication failed", "client", r.RemoteAddr, "user", user, "err", err)
		if d := p.cfg.LoginFailureDelay; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done(): // client gone or server closing
			case <-p.stopped.Done():
			}
			t.Stop()
		}
		return login{}, errUnauthorized
	}
	return login{user: user, key: sha256.Sum256([]byte(password)), mech: mech}, nil
}

// client returns the shared Kafka client of the call's login, creating it
// on first use, or anew when the password or the listener changed.
func (c *call) client() (*userClient, error) {
	if c.uc != nil {
		return c.uc, nil
	}
	seed, err := c.p.cfg.Bootstrap()
	if err != nil {
		return nil, errf(http.StatusInternalServerError, codeKafkaRetriable, "Kafka error: %v", err)
	}
	c.login.seed = seed
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return nil, errClosed
	}
	uc := p.mu.clients[c.login.user]
	if uc != nil && (uc.login.key != c.login.key || uc.login.seed != seed) {
		uc.cl.Close()
		uc = nil
	}
	if uc == nil {
		cl, err := kgo.NewClient(append(c.login.opts(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(0),
			// Produces of one user wait while this much is unacknowledged:
			// the bound of a stream's records in flight, and of
			// concurrent calls together.
			kgo.MaxBufferedBytes(int(max(64<<20, 2*p.cfg.MaxRequestBytes))),
		)...)
		if err != nil {
			return nil, err
		}
		uc = &userClient{login: c.login, cl: cl, adm: kadm.NewClient(cl)}
		p.mu.clients[c.login.user] = uc
	}
	uc.busy++
	c.uc = uc
	return uc, nil
}

// release lets go of the call's user client, if it took one.
func (c *call) release() {
	if c.uc == nil {
		return
	}
	c.p.mu.Lock()
	c.uc.busy--
	c.uc.lastUsed = time.Now().UnixNano()
	c.p.mu.Unlock()
}

// closeIdleClients closes the user clients no call held for idle.
func (p *Proxy) closeIdleClients(now time.Time, idle time.Duration) {
	var closing []*userClient
	p.mu.Lock()
	for user, uc := range p.mu.clients {
		if uc.busy == 0 && now.UnixNano()-uc.lastUsed > int64(idle) {
			delete(p.mu.clients, user)
			closing = append(closing, uc)
		}
	}
	p.mu.Unlock()
	for _, uc := range closing {
		p.log.Info("rest proxy closed an idle Kafka client", "user", uc.login.user)
		uc.cl.Close()
	}
}

// admin is the call's kadm client.
func (c *call) admin() (*kadm.Client, error) {
	uc, err := c.client()
	if err != nil {
		return nil, err
	}
	return uc.adm, nil
}

// mediaType is the request's Content-Type without parameters, lower case.
func (c *call) mediaType() string {
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// v2JSONTypes are the content types a v2 call without embedded data takes.
var v2JSONTypes = map[string]bool{ctV2: true, "application/vnd.kafka+json": true, "application/json": true}

// readBody reads the request body, at most MaxRequestBytes (413 beyond).
func (c *call) readBody() ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, c.p.cfg.MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errf(http.StatusRequestEntityTooLarge, http.StatusRequestEntityTooLarge,
				"HTTP 413 Request Entity Too Large: the body exceeds rest.proxy.max.request.bytes (%d)", tooBig.Limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errf(http.StatusRequestTimeout, http.StatusRequestTimeout, "HTTP 408 Request Timeout: the body did not arrive within %v", c.p.cfg.RequestTimeout)
		}
		return nil, errf(http.StatusBadRequest, http.StatusBadRequest, "HTTP 400 Bad Request: reading the body: %v", err)
	}
	return data, nil
}

// decode reads the JSON body into v. An empty body leaves v as it is
// unless required. Unknown fields are refused, as Jackson refuses them.
func (c *call) decode(v any, required bool) error {
	data, err := c.readBody()
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if required {
			return errPayload("Request body is empty. Data is required.")
		}
		return nil
	}
	return decodeJSON(data, v)
}

func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errJSON(err)
	}
	if dec.More() {
		return errJSON(errors.New("trailing data after the JSON value"))
	}
	return nil
}

// baseURL is the scheme and host the client used, for base_uri and v3's
// self links.
func (c *call) baseURL() string {
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.r.Host
}

// expireLoop closes instances unused for InstanceTimeout, checking a few
// times per timeout, until Close.
func (p *Proxy) expireLoop() {
	defer p.expiry.Done()
	every := min(max(p.cfg.InstanceTimeout/4, 10*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stopped.Done():
			return
		case now := <-t.C:
			for _, in := range p.instances.removeExpired(now, p.cfg.InstanceTimeout) {
				p.log.Info("rest proxy consumer instance expired", "group", in.group, "instance", in.name)
				in.close()
			}
			p.closeIdleClients(now, p.cfg.InstanceTimeout)
		}
	}
}
