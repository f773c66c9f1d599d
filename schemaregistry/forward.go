package schemaregistry

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Writes go to one writer: the registry of the broker that leads
// _schemas partition 0, as Confluent's registries send writes to their
// elected leader. A registry elsewhere forwards the request to the
// writer's URL: schema.registry.listeners as the leader reports it in
// DescribeConfigs, on the host of its Kafka listener when it binds every
// interface. It answers once its own view holds the offset the writer
// wrote (read-your-writes). When the writer's URL cannot be known (its
// listener has port 0) or the leader cannot be found, the registry writes
// itself; the reader's refusal of duplicate ids and versions keeps that
// safe.

// HTTP headers between registries.
const (
	// headerForwarded marks a forwarded write: the receiver writes it
	// itself, whoever leads, so a request never travels twice.
	headerForwarded = "X-Kbroker-Forwarded"
	// headerWriter names the node whose registry wrote (on write answers).
	headerWriter = "X-Kbroker-Schema-Writer"
	// headerOffset is the _schemas offset the writer's view held when it
	// answered; the forwarding registry waits for it before answering.
	headerOffset = "X-Kbroker-Schemas-Offset"
)

// forwardedAnswer is a writer's answer, passed on as it came.
type forwardedAnswer struct {
	status int
	ct     string
	writer string
	body   []byte
}

// maxForwardedAnswer bounds a writer's answer read by the forwarder.
const maxForwardedAnswer = 4 << 20

// writes wraps a write endpoint: forwarded to the writer unless this
// registry is it (or cannot tell).
func (r *Registry) writes(f endpointFunc) endpointFunc {
	return func(w http.ResponseWriter, req *http.Request) (int, any, error) {
		ctx, cancel := r.requestCtx(req)
		defer cancel()
		if err := r.waitReady(ctx); err != nil {
			return 0, nil, err
		}
		if err := r.authorizeWrite(req); err != nil {
			return 0, nil, err
		}
		body, err := readBody(req)
		if err != nil {
			return 0, nil, err
		}
		if req.Header.Get(headerForwarded) == "" {
			if url := r.writerURL(ctx); url != "" {
				return r.forward(w, req, url, body)
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		status, out, err := f(w, req)
		if err == nil {
			r.mu.RLock()
			applied := r.mu.applied
			r.mu.RUnlock()
			w.Header().Set(headerOffset, strconv.FormatInt(applied, 10))
			w.Header().Set(headerWriter, strconv.Itoa(int(r.cfg.NodeID)))
		}
		return status, out, err
	}
}

// writerURL is the base URL of the writer's registry, or "" when this
// registry writes: it leads _schemas-0, or the writer cannot be found or
// reached by URL.
func (r *Registry) writerURL(ctx context.Context) string {
	if r.cfg.NodeID < 0 {
		return ""
	}
	r.mu.RLock()
	adm := r.mu.adm
	r.mu.RUnlock()
	if adm == nil {
		return ""
	}
	md, err := adm.Metadata(ctx, r.cfg.Topic)
	if err != nil {
		r.warnOnce("schema registry: finding the writer (leader of "+r.cfg.Topic+"-0); writing here", "err", err)
		return ""
	}
	p, ok := md.Topics[r.cfg.Topic].Partitions[0]
	if !ok || p.Leader < 0 || p.Leader == r.cfg.NodeID {
		return ""
	}
	var host string
	for _, b := range md.Brokers {
		if b.NodeID == p.Leader {
			host = b.Host
		}
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, p.Leader)
	if err != nil {
		r.warnOnce("schema registry: reading the writer's schema.registry.listeners; writing here", "leader", p.Leader, "err", err)
		return ""
	}
	url := writerListener(rcs, p.Leader, host, r.cfg.ForwardTLS != nil)
	if url == "" {
		r.warnOnce("schema registry: the writer's schema.registry.listeners has no fixed-port entry this registry can forward to (http://, or https:// with TLS); writing here", "leader", p.Leader)
	}
	return url
}

// warnOnce logs a reason to write here instead of forwarding, once until
// the reason changes (it would otherwise repeat at every write).
func (r *Registry) warnOnce(msg string, args ...any) {
	key := fmt.Sprint(append([]any{msg}, args...)...)
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	if r.lastWarning == key {
		return
	}
	r.lastWarning = key
	r.log.Warn(msg, args...)
}

// writerListener is the first http:// entry of the leader's
// schema.registry.listeners (or https:// one when https is allowed), its
// wildcard host replaced by the leader's Kafka host; "" if it has none
// with a fixed port.
func writerListener(rcs kadm.ResourceConfigs, leader int32, kafkaHost string, https bool) string {
	rc, err := rcs.On(strconv.Itoa(int(leader)), nil)
	if err != nil {
		return ""
	}
	for _, c := range rc.Configs {
		if c.Key != "schema.registry.listeners" {
			continue
		}
		for _, l := range strings.Split(c.MaybeValue(), ",") {
			scheme, rest, ok := strings.Cut(strings.TrimSpace(l), "://")
			if !ok || scheme != "http" && (scheme != "https" || !https) {
				continue
			}
			host, port, err := net.SplitHostPort(rest)
			if err != nil || port == "0" || port == "" {
				continue
			}
			if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
				host = kafkaHost
			}
			return scheme + "://" + net.JoinHostPort(host, port)
		}
	}
	return ""
}

// authorizeWrite asks Config.AuthorizeWrite whether req's caller may write.
func (r *Registry) authorizeWrite(req *http.Request) error {
	if r.cfg.AuthorizeWrite == nil {
		return nil
	}
	user, _, _ := req.BasicAuth()
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	if r.cfg.AuthorizeWrite(user, host) {
		return nil
	}
	if user == "" {
		user = "ANONYMOUS"
	}
	return &Error{http.StatusForbidden, codeForbidden, fmt.Sprintf("User:%s is denied operation Write on Topic: %s", user, r.cfg.Topic)}
}

// forward sends the write to the writer and passes its answer on once
// this registry's view holds what the writer wrote.
func (r *Registry) forward(_ http.ResponseWriter, req *http.Request, base string, body []byte) (int, any, error) {
	ctx, cancel := r.requestCtx(req)
	defer cancel()
	fwd, err := http.NewRequestWithContext(ctx, req.Method, base+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, errForwarding(err)
	}
	for _, h := range []string{"Content-Type", "Accept", "Authorization"} {
		if v := req.Header.Get(h); v != "" {
			fwd.Header.Set(h, v)
		}
	}
	fwd.Header.Set(headerForwarded, strconv.Itoa(int(r.cfg.NodeID)))
	resp, err := r.client.Do(fwd)
	if err != nil {
		return 0, nil, errForwarding(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardedAnswer))
	if err != nil {
		return 0, nil, errForwarding(err)
	}
	if off, err := strconv.ParseInt(resp.Header.Get(headerOffset), 10, 64); err == nil {
		if err := r.waitApplied(ctx, off); err != nil {
			return 0, nil, err
		}
	}
	return resp.StatusCode, forwardedAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get(headerWriter), b}, nil
}

// errForwarding is 50003.
func errForwarding(err error) *Error {
	return &Error{http.StatusInternalServerError, codeRequestForwardingFailed, "Error while forwarding the request to the leader: " + err.Error()}
}

// newForwardClient is the HTTP client of forwarded writes; tc (may be
// nil) is its TLS configuration for https:// writers.
func newForwardClient(timeout time.Duration, tc *tls.Config) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second, TLSClientConfig: tc}}
}
